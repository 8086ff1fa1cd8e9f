#include "bench/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tern::bench {
namespace {

constexpr double kMarginLeft = 84;
constexpr double kMarginRight = 28;
constexpr double kMarginTop = 48;
constexpr double kMarginBottom = 64;

struct Range {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();

    void add(double value) {
        if (!std::isfinite(value)) return;
        lo = std::min(lo, value);
        hi = std::max(hi, value);
    }
    bool empty() const { return lo > hi; }
};

// Maps data coordinates to pixels.
struct Scale {
    double data_lo, data_hi, pixel_lo, pixel_hi;
    double operator()(double value) const {
        return pixel_lo + (value - data_lo) / (data_hi - data_lo) * (pixel_hi - pixel_lo);
    }
};

void data_ranges(const ChartSpec& chart, Range* x, Range* y) {
    for (const LineSeries& series : chart.lines) {
        for (size_t idx = 0; idx < std::min(series.x.size(), series.y.size()); ++idx) {
            x->add(series.x[idx]);
            y->add(series.y[idx]);
        }
    }
    for (const BarSeries& series : chart.bars) {
        for (double edge : series.edges) x->add(edge);
        for (double height : series.heights) y->add(height);
    }
    if (x->empty()) *x = {0, 1};
    if (y->empty()) *y = {0, 1};
    // Counts, rates and latencies are all >= 0: anchor the y axis at zero so bars and slopes are honest.
    y->lo = std::min(0.0, y->lo);
    for (Range* range : {x, y}) {
        if (range->hi - range->lo < 1e-12) {
            const double pad = std::max(std::fabs(range->lo) * 0.1, 1.0);
            range->lo = range->lo >= 0 && range->lo - pad < 0 ? 0 : range->lo - pad;
            range->hi += pad;
        }
    }
}

void draw_axes(const ChartSpec& chart, const PlotArea& area, const std::vector<double>& x_ticks,
               const std::vector<double>& y_ticks, const Scale& sx, const Scale& sy, std::string* svg) {
    for (double tick : y_ticks) {
        const double py = sy(tick);
        *svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#e0e0e0"/>)", area.left,
                            py, area.right, py);
        *svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" font-size="12">{}</text>)",
                            area.left - 8, py + 4, format_tick(tick));
    }
    for (double tick : x_ticks) {
        const double px = sx(tick);
        *svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#f0f0f0"/>)", px,
                            area.top, px, area.bottom);
        *svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#333"/>)", px,
                            area.bottom, px, area.bottom + 5);
        *svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="12">{}</text>)", px,
                            area.bottom + 20, format_tick(tick));
    }
    *svg += fmt::format(R"(<line class="x-axis" x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#222" )"
                        R"(stroke-width="2"/>)",
                        area.left, area.bottom, area.right);
    *svg += fmt::format(R"(<line class="y-axis" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#222" )"
                        R"(stroke-width="2"/>)",
                        area.left, area.top, area.bottom);
    *svg += fmt::format(R"(<text class="x-label" x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="14">{}</text>)",
                        (area.left + area.right) / 2, chart.height - 18.0, xml_escape(chart.x_label));
    *svg += fmt::format(R"(<text class="y-label" x="0" y="0" text-anchor="middle" font-size="14" )"
                        R"svg(transform="translate(22 {:.1f}) rotate(-90)">{}</text>)svg",
                        (area.top + area.bottom) / 2, xml_escape(chart.y_label));
}

void draw_series(const ChartSpec& chart, const Scale& sx, const Scale& sy, std::string* svg) {
    const auto& palette = chart_palette();
    size_t color_idx = 0;
    for (const BarSeries& series : chart.bars) {
        const std::string& color = palette[color_idx++ % palette.size()];
        for (size_t idx = 0; idx < series.heights.size() && idx + 1 < series.edges.size(); ++idx) {
            const double x0 = sx(series.edges[idx]);
            const double x1 = sx(series.edges[idx + 1]);
            const double y1 = sy(series.heights[idx]);
            *svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" )"
                                R"(fill-opacity="0.75" stroke="white" stroke-width="0.5"/>)",
                                x0, y1, std::max(0.0, x1 - x0), std::max(0.0, sy(0) - y1), color);
        }
    }
    for (const LineSeries& series : chart.lines) {
        const std::string& color = palette[color_idx++ % palette.size()];
        std::string points;
        for (size_t idx = 0; idx < std::min(series.x.size(), series.y.size()); ++idx) {
            points += fmt::format("{:.1f},{:.1f} ", sx(series.x[idx]), sy(series.y[idx]));
        }
        *svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2.5"/>)", points, color);
        if (!series.markers) continue;
        for (size_t idx = 0; idx < std::min(series.x.size(), series.y.size()); ++idx) {
            *svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)", sx(series.x[idx]),
                                sy(series.y[idx]), color);
        }
    }
}

std::vector<std::string> legend_names(const ChartSpec& chart) {
    std::vector<std::string> names;
    for (const BarSeries& series : chart.bars) names.push_back(series.name);
    for (const LineSeries& series : chart.lines) names.push_back(series.name);
    if (names.size() < 2) names.clear();
    return names;
}

// Width of the legend box to the right of the plot; 0 when a single series needs no legend.
double legend_width(const ChartSpec& chart) {
    size_t longest = 0;
    const std::vector<std::string> names = legend_names(chart);
    for (const std::string& name : names) longest = std::max(longest, name.size());
    return names.empty() ? 0.0 : 40.0 + 7.5 * static_cast<double>(longest);
}

void draw_legend(const ChartSpec& chart, const PlotArea& area, std::string* svg) {
    const std::vector<std::string> names = legend_names(chart);
    if (names.empty()) return;
    const double x = area.right + 14;
    const double y = area.top;
    *svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="white" stroke="#bbb"/>)",
                        x, y, legend_width(chart), 8.0 + 18.0 * static_cast<double>(names.size()));
    for (size_t idx = 0; idx < names.size(); ++idx) {
        const double row_y = y + 16 + 18.0 * static_cast<double>(idx);
        *svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="14" height="10" fill="{}"/>)", x + 8, row_y - 9,
                            chart_palette()[idx % chart_palette().size()]);
        *svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12">{}</text>)", x + 28, row_y,
                            xml_escape(names[idx]));
    }
}

}  // namespace

const std::vector<std::string>& chart_palette() {
    static const std::vector<std::string> palette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    return palette;
}

PlotArea plot_area(const ChartSpec& chart) {
    const double legend = legend_width(chart);
    return {kMarginLeft, kMarginTop, chart.width - kMarginRight - (legend > 0 ? legend + 14 : 0.0),
            chart.height - kMarginBottom};
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
    if (!(hi > lo) || max_ticks < 2) return {lo};
    const double raw_step = (hi - lo) / (max_ticks - 1);
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
    double step = magnitude * 10;
    for (double factor : {1.0, 2.0, 5.0, 10.0}) {
        if (magnitude * factor >= raw_step) {
            step = magnitude * factor;
            break;
        }
    }
    std::vector<double> ticks;
    // Multiples of the step rather than a running sum, so rounding errors do not accumulate along the axis.
    const double first_index = std::floor(lo / step + 1e-9);
    for (double index = first_index; ticks.size() < 64; index += 1) {
        const double tick = index * step;
        ticks.push_back(std::fabs(tick) < step * 1e-9 ? 0.0 : tick);
        if (tick >= hi - step * 1e-9) break;
    }
    return ticks;
}

std::string format_tick(double value) {
    if (value == 0) return "0";
    if (std::fabs(value) >= 1e6 || std::fabs(value) < 1e-3) return fmt::format("{:.3g}", value);
    std::string text = fmt::format("{:.3f}", value);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
}

std::string xml_escape(std::string_view text) {
    std::string out;
    for (char ch : text) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += ch;
        }
    }
    return out;
}

std::string render_svg(const ChartSpec& chart) {
    Range x_range;
    Range y_range;
    data_ranges(chart, &x_range, &y_range);
    const std::vector<double> x_ticks = nice_ticks(x_range.lo, x_range.hi, 8);
    const std::vector<double> y_ticks = nice_ticks(y_range.lo, y_range.hi, 6);
    const PlotArea area = plot_area(chart);
    const Scale sx{std::min(x_ticks.front(), x_range.lo), std::max(x_ticks.back(), x_range.hi), area.left, area.right};
    const Scale sy{std::min(y_ticks.front(), y_range.lo), std::max(y_ticks.back(), y_range.hi), area.bottom, area.top};
    std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" )"
                                  R"(viewBox="0 0 {0} {1}" font-family="DejaVu Sans, Arial, sans-serif">)",
                                  chart.width, chart.height);
    svg += "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += fmt::format(R"(<text class="title" x="{:.1f}" y="28" text-anchor="middle" font-size="16" )"
                       R"(font-weight="bold">{}</text>)",
                       chart.width / 2.0, xml_escape(chart.title));
    svg += "\n";
    draw_axes(chart, area, x_ticks, y_ticks, sx, sy, &svg);
    svg += "\n";
    draw_series(chart, sx, sy, &svg);
    svg += "\n";
    draw_legend(chart, area, &svg);
    svg += "\n</svg>\n";
    return svg;
}

}  // namespace tern::bench
