// Small SVG charts, generated as text: a line chart, stacked bars and plain
// bars. Each chart is one self-contained <svg> element with an id, a viewBox
// (so the page can scale it) and no script, fonts or links: the report must
// open anywhere, offline, and look the same.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hetrain::report {

// Chart geometry, in SVG user units (px at scale 1).
inline constexpr double kChartWidth = 560.0;
inline constexpr double kChartHeight = 300.0;

// The colour of series `i` (a 10-colour palette, repeated).
std::string series_color(std::size_t i);

// Escapes &, <, >, " and ' for HTML/XML text and attributes.
std::string xml_escape(const std::string& text);

// Titles shared by every chart.
struct ChartText {
  std::string title;
  std::string x_label;
  std::string y_label;
};

// One line of a line chart; x and y have the same length.
struct Series {
  std::string name;
  std::string color;
  std::vector<double> x;
  std::vector<double> y;
};

struct LineOptions {
  bool y_from_zero = false;  // start the y axis at 0 (shares, seconds) or fit the data (accuracy)
  bool x_integer = false;    // label whole x values only (epochs)
};

// One <path> per series, with a circle per point when the points are few
// enough to tell apart.
std::string line_chart(const std::string& id, const ChartText& text, const std::vector<Series>& series,
                       const LineOptions& options = {});

// One stacked segment kind (e.g. "compute"), a value per category.
struct BarSegment {
  std::string name;
  std::string color;
  std::vector<double> values;
};

// One bar per category, the segments stacked bottom-up in the given order.
std::string stacked_bars(const std::string& id, const ChartText& text,
                         const std::vector<std::string>& categories, const std::vector<BarSegment>& segments);

// One bar per category, each in its own colour, its value printed above it
// with `decimals` decimals.
std::string bars(const std::string& id, const ChartText& text, const std::vector<std::string>& categories,
                 const std::vector<double>& values, const std::vector<std::string>& colors, int decimals);

// One row of a timeline: spans laid along the x axis.
struct TimelineSpan {
  double begin = 0.0;
  double end = 0.0;
  std::string color;
  std::string label;  // tooltip
};
struct TimelineRow {
  std::string name;
  std::vector<TimelineSpan> spans;
};

// A Gantt chart: one horizontal lane per row, a <rect> per span; `legend`
// names the colours.
std::string timeline(const std::string& id, const ChartText& text, const std::vector<TimelineRow>& rows,
                     const std::vector<std::pair<std::string, std::string>>& legend_entries);

// Evenly spaced "nice" tick values (steps of 1, 2 or 5 x 10^k) covering
// [lo, hi], about `target` of them. lo == hi is widened first.
std::vector<double> nice_ticks(double lo, double hi, std::size_t target = 5);

}  // namespace hetrain::report
