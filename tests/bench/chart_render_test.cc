// Renders the report charts in headless Chromium and checks the screenshot: every chart shows its axes, its title
// and axis labels, and its series in the palette colours. Skipped (with a message) where Chromium is not installed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "bench/charts.h"
#include "bench/png_image.h"

namespace tern::bench {
namespace {

namespace fs = std::filesystem;
using testing::RgbImage;

constexpr int kWidth = 720;
constexpr int kHeight = 440;

std::string find_chromium() {
    for (const char* name : {"chromium", "chromium-browser"}) {
        for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
            const fs::path path = fs::path(dir) / name;
            if (fs::exists(path)) return path.string();
        }
    }
    return "";
}

RunPoint synthetic_run(int64_t concurrency, double ttft_ms, double tpot_ms) {
    RunPoint run;
    run.max_concurrency = concurrency;
    for (int idx = 0; idx < 60; ++idx) {
        RequestRecord record;
        record.success = true;
        record.start_s = 0.05 * idx;
        record.ttft_s = (ttft_ms + 3.0 * (idx % 13)) / 1000.0;
        record.itl_s.assign(15, (tpot_ms + 0.4 * (idx % 7)) / 1000.0);
        record.e2el_s = record.ttft_s;
        for (double gap : record.itl_s) record.e2el_s += gap;
        record.output_tokens = 16;
        run.load.records.push_back(record);
    }
    run.summary = summarize(run.load.records, 3.0 + 0.2 * static_cast<double>(concurrency), GoodputSlo{}, 0);
    return run;
}

bool is_dark(const uint8_t* pixel) { return pixel[0] < 110 && pixel[1] < 110 && pixel[2] < 110; }

bool near_colour(const uint8_t* pixel, int r, int g, int b) {
    return std::abs(pixel[0] - r) < 40 && std::abs(pixel[1] - g) < 40 && std::abs(pixel[2] - b) < 40;
}

int count_pixels(const RgbImage& image, int x0, int y0, int x1, int y1,
                 const std::function<bool(const uint8_t*)>& test) {
    int count = 0;
    for (int y = std::max(0, y0); y < std::min(image.height, y1); ++y) {
        for (int x = std::max(0, x0); x < std::min(image.width, x1); ++x) count += test(image.at(x, y)) ? 1 : 0;
    }
    return count;
}

// Checks one chart drawn at (ox, oy) of the screenshot.
void check_chart(const RgbImage& image, int ox, int oy, const std::string& name, const ChartSpec& chart, int r, int g,
                 int b) {
    SCOPED_TRACE(name);
    const PlotArea area = plot_area(chart);
    const int axis_x = ox + static_cast<int>(area.left);
    const int axis_y = oy + static_cast<int>(area.bottom);
    const int plot_height = static_cast<int>(area.bottom - area.top);
    const int plot_width = static_cast<int>(area.right - area.left);
    // The y axis: a dark vertical line along the plot's left edge; the x axis along its bottom.
    EXPECT_GT(count_pixels(image, axis_x - 1, oy + static_cast<int>(area.top), axis_x + 2, axis_y, is_dark),
              plot_height * 9 / 10);
    EXPECT_GT(count_pixels(image, axis_x, axis_y - 1, ox + static_cast<int>(area.right), axis_y + 2, is_dark),
              plot_width * 9 / 10);
    // Title, x label, y label and tick labels are text: dark pixels where each is placed.
    EXPECT_GT(count_pixels(image, ox + 150, oy + 10, ox + kWidth - 150, oy + 34, is_dark), 40);
    EXPECT_GT(count_pixels(image, ox + 150, oy + kHeight - 34, ox + kWidth - 150, oy + kHeight - 4, is_dark), 40);
    EXPECT_GT(count_pixels(image, ox + 8, oy + 120, ox + 30, oy + kHeight - 120, is_dark), 40);
    EXPECT_GT(count_pixels(image, ox + 20, oy + 40, axis_x - 6, axis_y + 8, is_dark), 20);
    const int right = ox + static_cast<int>(area.right);
    EXPECT_GT(count_pixels(image, axis_x, axis_y + 8, right + 10, axis_y + 28, is_dark), 20);
    // The first series, in the first palette colour, inside the plot area.
    EXPECT_GT(count_pixels(image, axis_x + 2, oy + static_cast<int>(area.top), ox + static_cast<int>(area.right),
                           axis_y - 1, [&](const uint8_t* pixel) { return near_colour(pixel, r, g, b); }),
              30);
}

TEST(ChartRender, ChartsRenderInHeadlessChromiumWithAxesAndLabels) {
    const std::string chromium = find_chromium();
    if (chromium.empty()) {
        GTEST_SKIP() << "chromium is not installed (scripts/install-deps installs it); skipping the SVG screenshot "
                        "test";
    }
    const fs::path dir = fs::path(TERN_TEST_TMP) / "chart_render";
    fs::remove_all(dir);
    fs::create_directories(dir / "sweep");
    const std::vector<RunPoint> sweep = {synthetic_run(1, 40, 8), synthetic_run(4, 90, 11), synthetic_run(16, 260, 19)};
    ASSERT_TRUE(write_charts(sweep, (dir / "sweep").string()).is_ok());
    ASSERT_TRUE(write_charts({synthetic_run(8, 120, 12)}, (dir / "single").string()).is_ok());  // same as `single`
    // One page, one browser start: the charts in a 2-column grid at known offsets.
    const char* files[] = {"sweep/ttft.svg", "sweep/tpot.svg", "sweep/throughput_vs_concurrency.svg",
                           "sweep/latency_vs_throughput.svg", "single/ttft.svg", "single/tpot.svg"};
    std::ofstream page(dir / "page.html");
    page << "<!DOCTYPE html><html><body style=\"margin:0;background:white\"><div style=\"display:grid;"
            "grid-template-columns:720px 720px\">";
    for (const char* file : files) {
        page << "<img style=\"display:block\" width=\"720\" height=\"440\" src=\"" << file << "\">";
    }
    page << "</div></body></html>\n";
    page.close();
    const fs::path png = dir / "charts.png";
    const std::string command =
        "timeout 120 " + chromium + " --headless --no-sandbox --disable-gpu --disable-background-networking "
        "--disable-component-update --disable-sync --no-first-run --hide-scrollbars --user-data-dir=" +
        (dir / "profile").string() + " --window-size=1440,1320 --screenshot=" + png.string() + " file://" +
        (dir / "page.html").string() + " >" + (dir / "chromium.log").string() + " 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "chromium failed; see " << (dir / "chromium.log").string();
    const std::optional<RgbImage> image = testing::read_png(png.string());
    ASSERT_TRUE(image.has_value()) << "cannot decode " << png;
    ASSERT_EQ(image->width, 1440);
    ASSERT_EQ(image->height, 1320);
    const int non_white = count_pixels(*image, 0, 0, image->width, image->height,
                                       [](const uint8_t* p) { return p[0] < 245 || p[1] < 245 || p[2] < 245; });
    EXPECT_GT(non_white, image->width * image->height / 50) << "the screenshot is (nearly) blank";
    const std::vector<RunPoint> single = {synthetic_run(8, 120, 12)};
    const ChartSpec specs[] = {latency_distribution_chart(sweep, LatencyMetric::kTtft),
                               latency_distribution_chart(sweep, LatencyMetric::kTpot),
                               throughput_vs_concurrency_chart(sweep), latency_vs_throughput_chart(sweep),
                               latency_distribution_chart(single, LatencyMetric::kTtft),
                               latency_distribution_chart(single, LatencyMetric::kTpot)};
    for (int idx = 0; idx < 6; ++idx) {
        const int ox = (idx % 2) * kWidth;
        const int oy = (idx / 2) * kHeight;
        // Lines use the palette colour itself; histogram bars (the single run) blend it at 75% opacity on white.
        if (idx < 4) {
            check_chart(*image, ox, oy, files[idx], specs[idx], 0x1f, 0x77, 0xb4);
        } else {
            check_chart(*image, ox, oy, files[idx], specs[idx], 87, 153, 199);
        }
    }
}

}  // namespace
}  // namespace tern::bench
