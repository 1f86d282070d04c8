#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <regex>

#include "hetrain/report/svg.h"

namespace hetrain::report {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

TEST(NiceTicks, CoverTheRangeInStepsOfOneTwoOrFive) {
  for (auto [lo, hi] : {std::pair{0.0, 97.0}, {0.81, 0.83}, {-3.0, 12.5}, {5.0, 5.0}, {0.0, 1e-3}}) {
    const auto t = nice_ticks(lo, hi);
    ASSERT_GE(t.size(), 2u) << lo << " " << hi;
    EXPECT_LE(t.front(), lo);
    EXPECT_GE(t.back(), hi);
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << step;
    EXPECT_LE(t.size(), 12u);
  }
}

TEST(XmlEscape, EscapesMarkup) {
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

TEST(LineChart, OnePathPerSeriesAndMarkersOnlyWhenFew) {
  Series a{"rank 0", "#111111", {1, 2, 3}, {10, 20, 30}};
  Series b{"rank 1", "#222222", {1, 2, 3}, {30, 20, 10}};
  const auto svg = line_chart("split-0", {"Split", "step", "b"}, {a, b});
  EXPECT_EQ(svg.rfind("<svg id=\"split-0\"", 0), 0u);
  EXPECT_EQ(count(svg, "<path class=\"data line\""), 2u);
  EXPECT_EQ(count(svg, "<circle class=\"data marker\""), 6u);
  EXPECT_NE(svg.find("stroke=\"#222222\""), std::string::npos);
  EXPECT_NE(svg.find(">rank 1</text>"), std::string::npos);  // legend

  Series many{"long", "#333333", {}, {}};
  for (int i = 0; i < 500; ++i) many.x.push_back(i), many.y.push_back(i % 7);
  const auto dense = line_chart("x", {"t", "x", "y"}, {many});
  EXPECT_EQ(count(dense, "<circle"), 0u);
  EXPECT_EQ(count(dense, " L"), 499u);
}

TEST(LineChart, HigherValuesAreDrawnHigher) {
  Series s{"s", "#000000", {1, 2}, {1, 5}};
  const auto svg = line_chart("c", {"t", "x", "y"}, {s}, {.y_from_zero = true});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("d=\"M([0-9.]+),([0-9.]+) L([0-9.]+),([0-9.]+)\"")));
  EXPECT_LT(std::stod(m[1]), std::stod(m[3]));  // x grows to the right
  EXPECT_GT(std::stod(m[2]), std::stod(m[4]));  // y = 5 is above y = 1 (smaller pixel y)
}

TEST(LineChart, EmptyDataSaysSo) {
  const auto svg = line_chart("e", {"t", "x", "y"}, {});
  EXPECT_EQ(count(svg, "class=\"data"), 0u);
  EXPECT_NE(svg.find("no data"), std::string::npos);
}

TEST(StackedBars, OneRectPerCategoryAndSegmentWithProportionalHeights) {
  const auto svg = stacked_bars("time-0", {"t", "worker", "s"}, {"rank 0", "rank 1"},
                                {{"compute", "#aaaaaa", {1.0, 4.0}}, {"wait", "#bbbbbb", {3.0, 0.0}}});
  EXPECT_EQ(count(svg, "<rect class=\"data bar\""), 4u);
  std::regex height("class=\"data bar\"[^>]*height=\"([0-9.]+)\"");
  std::vector<double> h;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), height); it != std::sregex_iterator(); ++it) {
    h.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(h.size(), 4u);  // rank 0 compute, rank 0 wait, rank 1 compute, rank 1 wait
  EXPECT_NEAR(h[1], 3 * h[0], 0.05);
  EXPECT_NEAR(h[2], h[0] + h[1], 0.05);  // both bars total 4 s
  EXPECT_NEAR(h[3], 0.0, 1e-9);
}

TEST(Timeline, OneRectPerNonEmptySpanInItsWorkersLane) {
  const std::vector<TimelineRow> rows = {
      {"rank 0", {{0, 10, "#111111", "compute"}, {10, 40, "#222222", "wait"}}},
      {"rank 1", {{0, 40, "#111111", "compute"}, {40, 40, "#222222", "no wait"}}}};
  const auto svg =
      timeline("timeline-0", {"t", "ms", ""}, rows, {{"compute", "#111111"}, {"wait", "#222222"}});
  EXPECT_EQ(count(svg, "<rect class=\"data span\""), 3u);  // the empty wait is not drawn
  std::regex rect("class=\"data span\" x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"([0-9.]+)\"");
  std::vector<std::array<double, 3>> r;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it) {
    r.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3])});
  }
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[1][2], 3 * r[0][2], 0.05);        // 30 ms of wait vs 10 of compute
  EXPECT_NEAR(r[0][0] + r[0][2], r[1][0], 0.05);  // the wait starts where compute ends
  EXPECT_NEAR(r[2][2], r[0][2] + r[1][2], 0.05);  // rank 1 computes the whole 40 ms
  EXPECT_GT(r[2][1], r[0][1]);                    // in the lane below
}

TEST(Bars, PrintTheValueAboveEachBar) {
  const auto svg = bars("compare-time", {"t", "run", "s"}, {"equal", "adaptive"}, {22.36, 10.79},
                        {"#111111", "#222222"}, 2);
  EXPECT_EQ(count(svg, "<rect class=\"data bar\""), 2u);
  EXPECT_NE(svg.find(">22.36</text>"), std::string::npos);
  EXPECT_NE(svg.find(">10.79</text>"), std::string::npos);
  EXPECT_NE(svg.find(">adaptive</text>"), std::string::npos);
}

}  // namespace
}  // namespace hetrain::report
