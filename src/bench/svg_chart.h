// A small SVG chart writer for benchmark reports: labelled axes with round-number ticks, a title, line series with
// markers, histogram bars and a legend. Output is a standalone SVG document on a white background; no scripts,
// no external fonts, so any browser renders it alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern::bench {

struct LineSeries {
    std::string name;  // shown in the legend when the chart has more than one series
    std::vector<double> x;
    std::vector<double> y;
    bool markers = true;
};

struct BarSeries {
    std::string name;
    std::vector<double> edges;    // bin edges, heights.size() + 1 of them, ascending
    std::vector<double> heights;
};

struct ChartSpec {
    std::string title;
    std::string x_label;  // with units, e.g. "TTFT (ms)"
    std::string y_label;
    std::vector<LineSeries> lines;
    std::vector<BarSeries> bars;
    int width = 720;
    int height = 440;
};

// Geometry of the plot area inside the SVG, in pixels (a legend, when there is one, stands to its right); exposed so
// tests can find the axes in a rendering.
struct PlotArea {
    double left = 0;
    double top = 0;
    double right = 0;
    double bottom = 0;
};
PlotArea plot_area(const ChartSpec& chart);

std::string render_svg(const ChartSpec& chart);

// Round tick values (1, 2 or 5 times a power of ten) covering [lo, hi], at most about `max_ticks` of them.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);

// Compact tick text: "0", "2.5", "1200", "1.5e+06".
std::string format_tick(double value);

std::string xml_escape(std::string_view text);

// The series colours, in order (matplotlib's "tab10").
const std::vector<std::string>& chart_palette();

}  // namespace tern::bench
