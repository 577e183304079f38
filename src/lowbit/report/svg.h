#pragma once
// Small SVG plots for `lowbit report`, written as text (no scripting, no external files): bars
// with whiskers, strips of samples, horizontal stacked bars, log-log scatter with ceilings. Every
// plot is one <svg class="plot"> with a title, axes and labelled ticks, so that a page of them
// reads without the tool.
#include <string>
#include <vector>

namespace lowbit::svg {

struct Bar {
  std::string label;
  double value = 0, low = 0, high = 0;  // whiskers from low to high (0, 0: none)
  std::string color;                     // "" = the default
};
std::string bars(const std::string& title, const std::string& y_label, const std::vector<Bar>& bars);

struct Strip {
  std::string label;
  std::vector<double> values;
};
// Each sample as a dot along a shared value axis, one row per strip (latency distributions).
std::string strips(const std::string& title, const std::string& x_label, const std::vector<Strip>& strips);

struct Segment {
  std::string label;
  double value = 0;
};
struct StackedRow {
  std::string label;
  std::vector<Segment> segments;  // drawn left to right
};
// One horizontal bar per row, split into segments with a shared legend by segment label.
std::string stacked(const std::string& title, const std::string& x_label, const std::vector<StackedRow>& rows);

struct Point {
  std::string label;  // shown beside the point when `labelled`
  double x = 0, y = 0;
  std::string series;
};
struct Line {  // y = min(slope * x, flat) for a roofline ceiling, or a horizontal line when slope = 0
  std::string label;
  double slope = 0, flat = 0;
};
// Scatter on log or linear axes, coloured by series, with optional roofline ceilings.
std::string scatter(const std::string& title, const std::string& x_label, const std::string& y_label,
                    const std::vector<Point>& points, const std::vector<Line>& lines, bool log_x, bool log_y,
                    bool labelled);

std::string escape(const std::string& s);  // for text and attributes

}  // namespace lowbit::svg
