#include "lowbit/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace lowbit::svg {
namespace {

constexpr double kW = 720, kH = 360;                          // the plot's size
constexpr double kLeft = 90, kRight = 20, kTop = 40, kBottom = 70;  // margins for labels
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string num(double v) {
  char b[32];
  if (v != 0 && (std::fabs(v) >= 1e4 || std::fabs(v) < 1e-2)) std::snprintf(b, sizeof b, "%.1e", v);
  else if (std::fabs(v) >= 100) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

// A linear or log axis over [lo, hi] mapped onto [a, b] pixels.
struct Axis {
  double lo, hi, a, b;
  bool log;
  double at(double v) const {
    if (log) {
      v = std::max(v, lo);
      return a + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (b - a);
    }
    return a + (v - lo) / (hi - lo) * (b - a);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      for (double p = std::floor(std::log10(lo)); p <= std::ceil(std::log10(hi)); ++p) {
        const double v = std::pow(10.0, p);
        if (v >= lo * 0.999 && v <= hi * 1.001) t.push_back(v);
      }
      return t;
    }
    const double span = hi - lo, raw = span / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
    return t;
  }
};

Axis linear(double lo, double hi, double a, double b) {
  if (!(hi > lo)) hi = lo + 1;
  return {lo, hi, a, b, false};
}

Axis logarithmic(double lo, double hi, double a, double b) {
  lo = std::pow(10.0, std::floor(std::log10(std::max(lo, 1e-12))));
  hi = std::pow(10.0, std::ceil(std::log10(std::max(hi, lo * 10))));
  return {lo, hi, a, b, true};
}

std::string open(const std::string& title) {
  return "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kW) + "\" height=\"" + num(kH) +
         "\" viewBox=\"0 0 " + num(kW) + " " + num(kH) + "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" +
         escape(title) + "</title>\n<text x=\"" + num(kW / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" +
         escape(title) + "</text>\n";
}

std::string y_axis(const Axis& y, const std::string& label) {
  std::string s = "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(kLeft) + "\" y2=\"" +
                  num(kH - kBottom) + "\" stroke=\"#333\"/>\n";
  for (double t : y.ticks()) {
    const double py = y.at(t);
    s += "<line x1=\"" + num(kLeft - 4) + "\" y1=\"" + fmt("%.1f", py) + "\" x2=\"" + num(kW - kRight) + "\" y2=\"" +
         fmt("%.1f", py) + "\" stroke=\"#ddd\"/>\n<text x=\"" + num(kLeft - 6) + "\" y=\"" + fmt("%.1f", py + 4) +
         "\" text-anchor=\"end\">" + num(t) + "</text>\n";
  }
  s += "<text transform=\"translate(16," + num((kTop + kH - kBottom) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       escape(label) + "</text>\n";
  return s;
}

std::string x_axis(const Axis& x, const std::string& label) {
  std::string s = "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(kH - kBottom) + "\" x2=\"" + num(kW - kRight) +
                  "\" y2=\"" + num(kH - kBottom) + "\" stroke=\"#333\"/>\n";
  for (double t : x.ticks()) {
    const double px = x.at(t);
    s += "<line x1=\"" + fmt("%.1f", px) + "\" y1=\"" + num(kTop) + "\" x2=\"" + fmt("%.1f", px) + "\" y2=\"" +
         num(kH - kBottom + 4) + "\" stroke=\"#eee\"/>\n<text x=\"" + fmt("%.1f", px) + "\" y=\"" +
         num(kH - kBottom + 16) + "\" text-anchor=\"middle\">" + num(t) + "</text>\n";
  }
  s += "<text x=\"" + num((kLeft + kW - kRight) / 2) + "\" y=\"" + num(kH - 30) + "\" text-anchor=\"middle\">" +
       escape(label) + "</text>\n";
  return s;
}

std::string color_of(const std::string& key, std::map<std::string, std::string>& colors) {
  auto it = colors.find(key);
  if (it != colors.end()) return it->second;
  const std::string c = kPalette[colors.size() % (sizeof kPalette / sizeof kPalette[0])];
  colors[key] = c;
  return c;
}

std::string legend(const std::map<std::string, std::string>& colors, const std::vector<std::string>& order) {
  std::string s;
  double x = kLeft;
  for (const std::string& k : order) {
    s += "<rect x=\"" + fmt("%.1f", x) + "\" y=\"" + num(kH - 18) + "\" width=\"10\" height=\"10\" fill=\"" + colors.at(k) +
         "\"/>\n<text x=\"" + fmt("%.1f", x + 14) + "\" y=\"" + num(kH - 9) + "\">" + escape(k) + "</text>\n";
    x += 24 + 6.5 * static_cast<double>(k.size());
  }
  return s;
}

}  // namespace

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '&') r += "&amp;";
    else if (c == '<') r += "&lt;";
    else if (c == '>') r += "&gt;";
    else if (c == '"') r += "&quot;";
    else r += c;
  }
  return r;
}

std::string bars(const std::string& title, const std::string& y_label, const std::vector<Bar>& bs) {
  std::string s = open(title);
  double hi = 0;
  for (const Bar& b : bs) hi = std::max({hi, b.value, b.high});
  const Axis y = linear(0, hi * 1.1, kH - kBottom, kTop);
  s += y_axis(y, y_label);
  const double slot = (kW - kLeft - kRight) / std::max<double>(1, static_cast<double>(bs.size())), w = slot * 0.6;
  for (size_t i = 0; i < bs.size(); ++i) {
    const Bar& b = bs[i];
    const double cx = kLeft + slot * (static_cast<double>(i) + 0.5), top = y.at(b.value);
    s += "<rect class=\"bar\" x=\"" + fmt("%.1f", cx - w / 2) + "\" y=\"" + fmt("%.1f", top) + "\" width=\"" +
         fmt("%.1f", w) + "\" height=\"" + fmt("%.1f", kH - kBottom - top) + "\" fill=\"" +
         (b.color.empty() ? kPalette[0] : b.color) + "\"><title>" + escape(b.label) + ": " + num(b.value) +
         "</title></rect>\n";
    if (b.high > 0) {
      const double yl = y.at(b.low), yh = y.at(b.high);
      s += "<line x1=\"" + fmt("%.1f", cx) + "\" y1=\"" + fmt("%.1f", yl) + "\" x2=\"" + fmt("%.1f", cx) + "\" y2=\"" +
           fmt("%.1f", yh) + "\" stroke=\"#222\"/>\n<line x1=\"" + fmt("%.1f", cx - w / 6) + "\" y1=\"" +
           fmt("%.1f", yh) + "\" x2=\"" + fmt("%.1f", cx + w / 6) + "\" y2=\"" + fmt("%.1f", yh) +
           "\" stroke=\"#222\"/>\n";
    }
    const double label_y = (b.high > 0 ? std::min(top, y.at(b.high)) : top) - 4;  // above the whisker
    s += "<text x=\"" + fmt("%.1f", cx + w / 4) + "\" y=\"" + fmt("%.1f", label_y) + "\" text-anchor=\"start\">" + num(b.value) +
         "</text>\n<text x=\"" + fmt("%.1f", cx) + "\" y=\"" + num(kH - kBottom + 16) + "\" text-anchor=\"middle\">" +
         escape(b.label) + "</text>\n";
  }
  return s + "</svg>\n";
}

std::string strips(const std::string& title, const std::string& x_label, const std::vector<Strip>& ss) {
  std::string s = open(title);
  double lo = 1e300, hi = 0;
  for (const Strip& st : ss)
    for (double v : st.values) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) lo = 0, hi = 1;
  const Axis x = linear(lo * 0.95, hi * 1.05, kLeft, kW - kRight);
  s += x_axis(x, x_label);
  const double row = (kH - kTop - kBottom) / std::max<double>(1, static_cast<double>(ss.size()));
  for (size_t i = 0; i < ss.size(); ++i) {
    const double cy = kTop + row * (static_cast<double>(i) + 0.5);
    s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + fmt("%.1f", cy + 4) + "\" text-anchor=\"end\">" +
         escape(ss[i].label) + "</text>\n";
    for (size_t k = 0; k < ss[i].values.size(); ++k) {
      const double jitter = (static_cast<double>((k * 7919) % 17) / 16.0 - 0.5) * row * 0.5;
      s += "<circle class=\"sample\" cx=\"" + fmt("%.1f", x.at(ss[i].values[k])) + "\" cy=\"" + fmt("%.1f", cy + jitter) +
           "\" r=\"2.5\" fill=\"" + kPalette[i % 10] + "\" fill-opacity=\"0.6\"/>\n";
    }
  }
  return s + "</svg>\n";
}

std::string stacked(const std::string& title, const std::string& x_label, const std::vector<StackedRow>& rows) {
  std::string s = open(title);
  double hi = 0;
  std::map<std::string, std::string> colors;
  std::vector<std::string> order;
  for (const StackedRow& r : rows) {
    double t = 0;
    for (const Segment& g : r.segments) {
      t += g.value;
      if (!colors.count(g.label)) order.push_back(g.label);
      color_of(g.label, colors);
    }
    hi = std::max(hi, t);
  }
  const Axis x = linear(0, hi * 1.05, kLeft + 40, kW - kRight);
  s += x_axis(x, x_label);
  const double row = (kH - kTop - kBottom) / std::max<double>(1, static_cast<double>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    const double y0 = kTop + row * static_cast<double>(i) + row * 0.15, h = row * 0.7;
    s += "<text x=\"" + num(kLeft + 34) + "\" y=\"" + fmt("%.1f", y0 + h / 2 + 4) + "\" text-anchor=\"end\">" +
         escape(rows[i].label) + "</text>\n";
    double at = 0;
    for (const Segment& g : rows[i].segments) {
      const double x0 = x.at(at), x1 = x.at(at + g.value);
      s += "<rect class=\"bar\" x=\"" + fmt("%.1f", x0) + "\" y=\"" + fmt("%.1f", y0) + "\" width=\"" +
           fmt("%.2f", std::max(0.0, x1 - x0)) + "\" height=\"" + fmt("%.1f", h) + "\" fill=\"" + colors.at(g.label) +
           "\"><title>" + escape(g.label) + ": " + num(g.value) + "</title></rect>\n";
      at += g.value;
    }
  }
  if (order.size() > 8) order.resize(8);
  return s + legend(colors, order) + "</svg>\n";
}

std::string scatter(const std::string& title, const std::string& x_label, const std::string& y_label,
                    const std::vector<Point>& pts, const std::vector<Line>& lines, bool log_x, bool log_y,
                    bool labelled) {
  std::string s = open(title);
  double xlo = 1e300, xhi = -1e300, ylo = 1e300, yhi = -1e300;
  for (const Point& p : pts) xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x), ylo = std::min(ylo, p.y), yhi = std::max(yhi, p.y);
  for (const Line& l : lines) yhi = std::max(yhi, l.flat), ylo = std::min(ylo, l.flat / 100);
  if (xlo > xhi) xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  const double xpad = (xhi - xlo) * 0.08 + 1e-9, ypad = (yhi - ylo) * 0.08 + 1e-9;
  const Axis x = log_x ? logarithmic(xlo, xhi, kLeft, kW - kRight) : linear(xlo - xpad, xhi + xpad, kLeft, kW - kRight);
  const Axis y = log_y ? logarithmic(ylo, yhi, kH - kBottom, kTop) : linear(ylo - ypad, yhi + ypad, kH - kBottom, kTop);
  s += y_axis(y, y_label) + x_axis(x, x_label);
  for (const Line& l : lines) {  // the ceiling drawn as a polyline across the x range
    std::string path;
    for (int i = 0; i <= 64; ++i) {
      const double xv = x.log ? std::pow(10.0, std::log10(x.lo) + (std::log10(x.hi) - std::log10(x.lo)) * i / 64.0)
                              : x.lo + (x.hi - x.lo) * i / 64.0;
      const double yv = l.slope > 0 ? std::min(l.slope * xv, l.flat) : l.flat;
      if (y.log && yv < y.lo) continue;
      path += (path.empty() ? "M" : " L") + fmt("%.1f", x.at(xv)) + "," + fmt("%.1f", y.at(std::min(yv, y.hi)));
    }
    if (path.empty()) continue;
    s += "<path class=\"ceiling\" d=\"" + path + "\" fill=\"none\" stroke=\"#999\" stroke-dasharray=\"5,3\"/>\n";
    s += "<text x=\"" + num(kW - kRight - 4) + "\" y=\"" + fmt("%.1f", y.at(std::min(l.flat, y.hi)) - 4) +
         "\" text-anchor=\"end\" fill=\"#666\">" + escape(l.label) + "</text>\n";
  }
  std::map<std::string, std::string> colors;
  std::vector<std::string> order;
  for (const Point& p : pts) {
    if (!colors.count(p.series)) order.push_back(p.series);
    const std::string c = color_of(p.series, colors);
    const double px = x.at(p.x), py = y.at(p.y);
    s += "<circle class=\"point\" cx=\"" + fmt("%.1f", px) + "\" cy=\"" + fmt("%.1f", py) + "\" r=\"4\" fill=\"" + c +
         "\"><title>" + escape(p.label) + " (" + num(p.x) + ", " + num(p.y) + ")</title></circle>\n";
    if (labelled)
      s += "<text x=\"" + fmt("%.1f", px + 6) + "\" y=\"" + fmt("%.1f", py - 6) + "\">" + escape(p.label) + "</text>\n";
  }
  return s + legend(colors, order) + "</svg>\n";
}

}  // namespace lowbit::svg
