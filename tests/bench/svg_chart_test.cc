#include "bench/svg_chart.h"

#include <gtest/gtest.h>

#include "bench/charts.h"

namespace tern::bench {
namespace {

size_t count_of(const std::string& text, const std::string& needle) {
    size_t count = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
    return count;
}

TEST(SvgChart, NiceTicksAreRoundAndCoverTheRange) {
    EXPECT_EQ(nice_ticks(0, 10, 6), (std::vector<double>{0, 2, 4, 6, 8, 10}));
    const std::vector<double> fractions = nice_ticks(0, 1, 6);
    ASSERT_EQ(fractions.size(), 6u);
    for (size_t idx = 0; idx < fractions.size(); ++idx) EXPECT_NEAR(fractions[idx], 0.2 * idx, 1e-12);
    const std::vector<double> ticks = nice_ticks(13, 987, 8);
    EXPECT_LE(ticks.front(), 13);
    EXPECT_GE(ticks.back(), 987);
    EXPECT_DOUBLE_EQ(ticks[1] - ticks[0], 200);
    EXPECT_EQ(format_tick(0), "0");
    EXPECT_EQ(format_tick(2.5), "2.5");
    EXPECT_EQ(format_tick(1200), "1200");
    EXPECT_EQ(format_tick(1.5e6), "1.5e+06");
}

TEST(SvgChart, RendersTitleAxesLabelsSeriesAndLegend) {
    ChartSpec chart;
    chart.title = "Latency <vs> throughput";
    chart.x_label = "output throughput (tokens/s)";
    chart.y_label = "latency (ms)";
    chart.lines.push_back({"mean TTFT", {10, 20, 30}, {5, 7, 12}, true});
    chart.lines.push_back({"p99 TTFT", {10, 20, 30}, {9, 15, 30}, true});
    const std::string svg = render_svg(chart);
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    EXPECT_NE(svg.find("Latency &lt;vs&gt; throughput"), std::string::npos);
    EXPECT_NE(svg.find(">output throughput (tokens/s)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">latency (ms)</text>"), std::string::npos);
    EXPECT_NE(svg.find("class=\"x-axis\""), std::string::npos);
    EXPECT_NE(svg.find("class=\"y-axis\""), std::string::npos);
    EXPECT_EQ(count_of(svg, "<polyline"), 2u);
    EXPECT_EQ(count_of(svg, "<circle"), 6u);
    EXPECT_NE(svg.find(">mean TTFT</text>"), std::string::npos);  // legend
    EXPECT_NE(svg.find(">p99 TTFT</text>"), std::string::npos);
    EXPECT_EQ(count_of(svg, "<text"), count_of(svg, "</text>"));
}

TEST(SvgChart, HistogramBarsCountEverySample) {
    const BarSeries bars = histogram({1, 2, 2, 3, 10}, 3, "ttft");
    ASSERT_EQ(bars.edges.size(), 4u);
    EXPECT_DOUBLE_EQ(bars.edges.front(), 1);
    EXPECT_DOUBLE_EQ(bars.edges.back(), 10);
    EXPECT_EQ(bars.heights, (std::vector<double>{4, 0, 1}));
    ChartSpec chart;
    chart.bars.push_back(bars);
    const std::string svg = render_svg(chart);
    EXPECT_EQ(count_of(svg, "fill-opacity=\"0.75\""), 3u);
}

TEST(SvgChart, DegenerateDataStillGivesAValidChart) {
    ChartSpec chart;
    chart.lines.push_back({"one point", {5}, {5}, true});
    const std::string svg = render_svg(chart);
    EXPECT_EQ(count_of(svg, "<circle"), 1u);
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.find("inf"), std::string::npos);
    ChartSpec empty;
    EXPECT_NE(render_svg(empty).find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace tern::bench
