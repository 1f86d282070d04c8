#include "hetrain/report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace hetrain::report {
namespace {

// Plot area margins, px: room for tick labels (left, bottom), the title and
// the legend (top).
constexpr double kMarginLeft = 62.0;
constexpr double kMarginRight = 16.0;
constexpr double kMarginTop = 34.0;  // below the title
constexpr double kTitleBaseline = 18.0;
constexpr double kMarginBottom = 44.0;
constexpr double kLegendRowHeight = 16.0;   // px per legend row
constexpr double kLegendItemWidth = 110.0;  // px per legend entry
constexpr double kLegendSwatch = 10.0;      // px, the coloured square
constexpr std::size_t kMaxMarkers = 60;     // beyond this many points a line has no dots
constexpr double kMarkerRadius = 3.0;       // px
constexpr double kBarFill = 0.6;            // fraction of a category's band a bar covers
constexpr std::size_t kMaxLabelChars = 18;  // category labels are cut beyond this

// Tableau 10: distinct, colour-blind friendly enough, and readable on white.
constexpr std::array<const char*, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string num(double v) { return fmt::format("{:.2f}", v); }

std::string tick_label(double v) {
  if (std::abs(v) < 1e-12) return "0";
  return fmt::format("{:.6g}", v);
}

std::string cut(const std::string& s) {
  return s.size() <= kMaxLabelChars ? s : s.substr(0, kMaxLabelChars - 1) + "~";
}

// The plot area and the data-to-pixel mapping of one chart.
struct Frame {
  double left = kMarginLeft, top = kMarginTop, right = kChartWidth - kMarginRight,
         bottom = kChartHeight - kMarginBottom;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  double x(double v) const { return left + (v - x_lo) / (x_hi - x_lo) * (right - left); }
  double y(double v) const { return bottom - (v - y_lo) / (y_hi - y_lo) * (bottom - top); }
};

std::size_t legend_per_row() {
  return static_cast<std::size_t>((kChartWidth - kMarginLeft - kMarginRight) / kLegendItemWidth);
}

std::size_t legend_rows(std::size_t entries) {
  const std::size_t per_row = legend_per_row();
  return entries == 0 ? 0 : (entries + per_row - 1) / per_row;
}

// <svg> opening, title; the frame's top is moved down for the legend rows.
std::string open_svg(const std::string& id, const ChartText& text, std::size_t legend_entries, Frame& f) {
  f.top = kMarginTop + static_cast<double>(legend_rows(legend_entries)) * kLegendRowHeight +
          (legend_entries > 0 ? kLegendRowHeight / 2 : 0.0);
  std::string s = fmt::format(
      "<svg id=\"{}\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\">\n<title>{}</title>\n",
      xml_escape(id), kChartWidth, kChartHeight + f.top - kMarginTop, xml_escape(text.title),
      xml_escape(text.title));
  f.bottom = kChartHeight + f.top - kMarginTop - kMarginBottom;
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   num(kChartWidth / 2), kTitleBaseline, xml_escape(text.title));
  return s;
}

std::string legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  const std::size_t per_row = legend_per_row();
  std::string s;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::size_t row = i / per_row, column = i % per_row;
    const double x = kMarginLeft + static_cast<double>(column) * kLegendItemWidth;
    const double y = kMarginTop + static_cast<double>(row + 1) * kLegendRowHeight - 4;
    s += fmt::format(
        "<rect class=\"swatch\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>\n",
        num(x), num(y - kLegendSwatch), kLegendSwatch, kLegendSwatch, entries[i].second,
        num(x + kLegendSwatch + 4), num(y), xml_escape(cut(entries[i].first)));
  }
  return s;
}

// Horizontal grid lines with y tick labels, the axes' labels; x ticks only
// when `x_ticks` is set (bar charts label their categories instead).
std::string axes(const Frame& f, const ChartText& text, const std::vector<double>& y_ticks,
                 const std::vector<double>* x_ticks) {
  std::string s;
  for (double t : y_ticks) {
    s += fmt::format(
        "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        num(f.left), num(f.right), num(f.y(t)), num(f.y(t)), num(f.left - 6), num(f.y(t) + 4), tick_label(t));
  }
  if (x_ticks) {
    for (double t : *x_ticks) {
      s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       num(f.x(t)), num(f.bottom + 16), tick_label(t));
    }
  }
  s += fmt::format("<line class=\"axis\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>\n", num(f.left),
                   num(f.right), num(f.bottom));
  s += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   num((f.left + f.right) / 2), num(f.bottom + 36), xml_escape(text.x_label));
  s += fmt::format(
      "<text class=\"label\" x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0})\">{1}"
      "</text>\n",
      num((f.top + f.bottom) / 2), xml_escape(text.y_label));
  return s;
}

// The y range [lo, hi] of the data, widened to nice ticks.
std::vector<double> fit_y(Frame& f, double lo, double hi) {
  auto ticks = nice_ticks(lo, hi);
  f.y_lo = ticks.front();
  f.y_hi = ticks.back();
  return ticks;
}

std::string empty_note(const Frame& f) {
  return fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n",
                     num((f.left + f.right) / 2), num((f.top + f.bottom) / 2));
}

}  // namespace

std::string series_color(std::size_t i) { return kPalette[i % kPalette.size()]; }

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, std::size_t target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0.0, hi = 1.0;
  if (hi < lo) std::swap(lo, hi);
  if (hi - lo < 1e-12) {
    const double pad = std::abs(lo) > 1e-12 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / static_cast<double>(std::max<std::size_t>(target, 1));
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double t = first; t < hi + step * 0.999; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  if (ticks.size() < 2) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string line_chart(const std::string& id, const ChartText& text, const std::vector<Series>& series,
                       const LineOptions& options) {
  Frame f;
  std::string s = open_svg(id, text, series.size(), f);
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const auto& sr : series) {
    for (std::size_t i = 0; i < sr.x.size() && i < sr.y.size(); ++i) {
      x_lo = std::min(x_lo, sr.x[i]), x_hi = std::max(x_hi, sr.x[i]);
      y_lo = std::min(y_lo, sr.y[i]), y_hi = std::max(y_hi, sr.y[i]);
    }
  }
  const bool empty = !std::isfinite(x_lo);
  if (empty) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  if (options.y_from_zero) y_lo = std::min(0.0, y_lo);
  const auto y_ticks = fit_y(f, y_lo, y_hi);
  auto x_ticks = nice_ticks(x_lo, x_hi);
  if (x_hi - x_lo < 1e-12) {
    f.x_lo = x_ticks.front(), f.x_hi = x_ticks.back();  // one point: centre it
  } else {
    f.x_lo = x_lo, f.x_hi = x_hi;  // data edge to edge; keep only ticks inside
    std::erase_if(x_ticks, [&](double t) { return t < x_lo - 1e-9 || t > x_hi + 1e-9; });
  }
  if (options.x_integer) {
    std::erase_if(x_ticks, [](double t) { return std::abs(t - std::round(t)) > 1e-9; });
  }
  s += axes(f, text, y_ticks, &x_ticks);
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& sr : series) {
    entries.emplace_back(sr.name, sr.color);
    const std::size_t n = std::min(sr.x.size(), sr.y.size());
    if (n == 0) continue;
    std::string d;
    for (std::size_t i = 0; i < n; ++i) {
      d += fmt::format("{}{},{}", i == 0 ? "M" : " L", num(f.x(sr.x[i])), num(f.y(sr.y[i])));
    }
    s += fmt::format("<path class=\"data line\" d=\"{}\" stroke=\"{}\"><title>{}</title></path>\n", d,
                     sr.color, xml_escape(sr.name));
    if (n > kMaxMarkers) continue;
    for (std::size_t i = 0; i < n; ++i) {
      s += fmt::format(
          "<circle class=\"data marker\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{}: {}</title>"
          "</circle>\n",
          num(f.x(sr.x[i])), num(f.y(sr.y[i])), kMarkerRadius, sr.color, xml_escape(sr.name),
          tick_label(sr.y[i]));
    }
  }
  if (empty) s += empty_note(f);
  s += legend(entries);
  return s + "</svg>\n";
}

std::string stacked_bars(const std::string& id, const ChartText& text,
                         const std::vector<std::string>& categories,
                         const std::vector<BarSegment>& segments) {
  Frame f;
  std::string s = open_svg(id, text, segments.size(), f);
  double top = 0.0;
  for (std::size_t c = 0; c < categories.size(); ++c) {
    double sum = 0.0;
    for (const auto& seg : segments) sum += c < seg.values.size() ? std::max(0.0, seg.values[c]) : 0.0;
    top = std::max(top, sum);
  }
  const auto y_ticks = fit_y(f, 0.0, top);
  s += axes(f, text, y_ticks, nullptr);
  const double band = (f.right - f.left) / static_cast<double>(std::max<std::size_t>(categories.size(), 1));
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(segments.size());
  for (const auto& seg : segments) entries.emplace_back(seg.name, seg.color);
  for (std::size_t c = 0; c < categories.size(); ++c) {
    const double x = f.left + band * (static_cast<double>(c) + (1.0 - kBarFill) / 2);
    double base = 0.0;
    for (const auto& seg : segments) {
      const double v = c < seg.values.size() ? std::max(0.0, seg.values[c]) : 0.0;
      s += fmt::format(
          "<rect class=\"data bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{} {}: {}</title></rect>\n",
          num(x), num(f.y(base + v)), num(band * kBarFill), num(f.y(base) - f.y(base + v)), seg.color,
          xml_escape(categories[c]), xml_escape(seg.name), tick_label(v));
      base += v;
    }
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(x + band * kBarFill / 2), num(f.bottom + 16), xml_escape(cut(categories[c])));
  }
  if (categories.empty()) s += empty_note(f);
  s += legend(entries);
  return s + "</svg>\n";
}

std::string timeline(const std::string& id, const ChartText& text, const std::vector<TimelineRow>& rows,
                     const std::vector<std::pair<std::string, std::string>>& legend_entries) {
  Frame f;
  std::string s = open_svg(id, text, legend_entries.size(), f);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : rows) {
    for (const auto& sp : r.spans) lo = std::min(lo, sp.begin), hi = std::max(hi, sp.end);
  }
  if (!std::isfinite(lo)) lo = 0.0, hi = 1.0;
  auto x_ticks = nice_ticks(lo, hi);
  f.x_lo = lo, f.x_hi = hi > lo ? hi : lo + 1.0;
  std::erase_if(x_ticks, [&](double t) { return t < lo - 1e-9 || t > f.x_hi + 1e-9; });
  s += axes(f, text, {}, &x_ticks);
  const double lane = (f.bottom - f.top) / static_cast<double>(std::max<std::size_t>(rows.size(), 1));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = f.top + lane * static_cast<double>(r);
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                     num(f.left - 6), num(y + lane / 2 + 4), xml_escape(cut(rows[r].name)));
    for (const auto& sp : rows[r].spans) {
      if (sp.end <= sp.begin) continue;
      s += fmt::format(
          "<rect class=\"data span\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{}</title></rect>\n",
          num(f.x(sp.begin)), num(y + lane * (1.0 - kBarFill) / 2), num(f.x(sp.end) - f.x(sp.begin)),
          num(lane * kBarFill), sp.color, xml_escape(sp.label));
    }
  }
  if (rows.empty()) s += empty_note(f);
  s += legend(legend_entries);
  return s + "</svg>\n";
}

std::string bars(const std::string& id, const ChartText& text, const std::vector<std::string>& categories,
                 const std::vector<double>& values, const std::vector<std::string>& colors, int decimals) {
  Frame f;
  std::string s = open_svg(id, text, 0, f);
  double top = 0.0;
  for (double v : values) top = std::max(top, v);
  const auto y_ticks = fit_y(f, 0.0, top);
  s += axes(f, text, y_ticks, nullptr);
  const double band = (f.right - f.left) / static_cast<double>(std::max<std::size_t>(categories.size(), 1));
  for (std::size_t c = 0; c < categories.size() && c < values.size(); ++c) {
    const double v = std::max(0.0, values[c]);
    const double x = f.left + band * (static_cast<double>(c) + (1.0 - kBarFill) / 2);
    const std::string color = c < colors.size() ? colors[c] : series_color(c);
    s += fmt::format(
        "<rect class=\"data bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
        "<title>{}: {}</title></rect>\n",
        num(x), num(f.y(v)), num(band * kBarFill), num(f.y(0.0) - f.y(v)), color, xml_escape(categories[c]),
        tick_label(v));
    s += fmt::format("<text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.{}f}</text>\n",
                     num(x + band * kBarFill / 2), num(f.y(v) - 4), v, decimals);
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(x + band * kBarFill / 2), num(f.bottom + 16), xml_escape(cut(categories[c])));
  }
  if (categories.empty()) s += empty_note(f);
  return s + "</svg>\n";
}

}  // namespace hetrain::report
