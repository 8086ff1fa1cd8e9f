// The throughput model against this machine's measured anchors, and calibration against known answers.
#include <gtest/gtest.h>

#include "plan/device.h"
#include "plan/kv_capacity.h"
#include "plan/perf_model.h"

namespace tern::plan {
namespace {

struct Fixture {
    ModelShape shape;
    WeightFootprint weights;
    DeviceSpec device;
    PerfModel model;

    Fixture(const char* model_name, DType type, const char* device_name)
        : shape(model_shape_from_preset(model_name).value()),
          weights(weight_footprint(shape, type)),
          device(find_device(device_name).value()),
          model(shape, weights, static_cast<double>(kv_bytes_per_token(shape, DType::kF16)),
                device.bandwidth_bytes_per_s, is_integer_quantized(type) ? device.int8_ops : device.fp16_flops, 512) {}

    Efficiency preset_efficiency() const { return {device.bandwidth_efficiency, device.compute_efficiency}; }
    double decode_tokens_per_s(double concurrency, double context) const {
        return concurrency / model.seconds(model.decode_step(concurrency, context), preset_efficiency());
    }
};

// /work/shared/ANCHORS.md: llama-batched-bench, tinyllama-1.1b Q4_0, prompt 128 + 128 generated, 2 threads:
// 22.2 / 56.1 / 60.1 / 74.2 tokens/s total at 1 / 4 / 8 / 16 sequences.
TEST(PerfModel, CpuPresetReproducesLlamaCppDecodeAnchors) {
    const Fixture fixture("tinyllama-1.1b", DType::kQ4_0, "cpu");
    const double context = 128 + 64;  // mean context while generating 128 after a 128-token prompt
    EXPECT_NEAR(fixture.decode_tokens_per_s(1, context), 22.2, 22.2 * 0.2);
    EXPECT_NEAR(fixture.decode_tokens_per_s(8, context), 60.1, 60.1 * 0.2);
    EXPECT_NEAR(fixture.decode_tokens_per_s(16, context), 74.2, 74.2 * 0.2);
}

TEST(PerfModel, DecodeIsBandwidthBoundAtOneRequestAndPrefillComputeBound) {
    const Fixture fixture("llama2-7b", DType::kF16, "h100");
    const StepCost step = fixture.model.decode_step(1, 1000);
    EXPECT_GT(fixture.model.memory_s(step), 20 * fixture.model.compute_s(step));
    // 512-token chunks do 512 operations per weight byte, above the H100's 295 (989 TFLOP/s / 3.35 TB/s).
    const StepCost prompt = fixture.model.prefill(2048);
    EXPECT_GT(fixture.model.compute_s(prompt), 1.5 * fixture.model.memory_s(prompt));
    // Doubling the batch adds the per-sequence work only: less than double the step time.
    const Efficiency efficiency = fixture.preset_efficiency();
    const double one = fixture.model.seconds(fixture.model.decode_step(1, 1000), efficiency);
    const double two = fixture.model.seconds(fixture.model.decode_step(2, 1000), efficiency);
    EXPECT_GT(two, one);
    EXPECT_LT(two, 1.2 * one);
}

TEST(PerfModel, SteadyStateIsConsistent) {
    const Fixture fixture("llama3-8b", DType::kQ8_0, "l4");
    const PerfPoint point = fixture.model.at(8, 700, 300, fixture.preset_efficiency());
    EXPECT_NEAR(point.output_tokens_per_s, 8 / point.tpot_s, 1e-9);
    EXPECT_NEAR(point.requests_per_s * 300, point.output_tokens_per_s, 1e-9);
    EXPECT_NEAR(point.tpot_s, point.step_s + 8 * point.prefill_s / 300, 1e-12);
    EXPECT_NEAR(point.ttft_s, point.prefill_s + point.step_s, 1e-12);
}

std::vector<ProfilePoint> measured_with(const PerfModel& model, const Efficiency& truth,
                                        std::vector<double> concurrencies) {
    std::vector<ProfilePoint> points;
    for (double concurrency : concurrencies) {
        ProfilePoint point;
        point.concurrency = concurrency;
        point.output_tokens_per_s = model.at(concurrency, 300, 150, truth).output_tokens_per_s;
        point.input_tokens_mean = 300;
        point.output_tokens_mean = 150;
        points.push_back(point);
    }
    return points;
}

TEST(PerfModel, OnePointCalibrationMatchesThatPoint) {
    const Fixture fixture("tinyllama-1.1b", DType::kQ8_0, "cpu");
    const std::vector<ProfilePoint> points = measured_with(fixture.model, {0.45, 0.08}, {4});
    const Calibration calibration = calibrate(fixture.model, points, {0.6, 0.14}, 512, 256);
    ASSERT_EQ(calibration.checks.size(), 1u);
    EXPECT_NEAR(calibration.checks[0].predicted.output_tokens_per_s, points[0].output_tokens_per_s, 1e-9);
    // One factor scales both shares, so their ratio stays the prior's.
    EXPECT_NEAR(calibration.efficiency.bandwidth / calibration.efficiency.compute, 0.6 / 0.14, 1e-9);
    EXPECT_NE(calibration.method.find("one measured point"), std::string::npos);
}

TEST(PerfModel, OnePointWithItsTtftRecoversBothEfficiencies) {
    const Fixture fixture("tinyllama-1.1b", DType::kQ4_0, "cpu");
    const Efficiency truth{1.5, 0.35};  // tern on this machine: prefill 3x llama.cpp's share of the int8 peak
    std::vector<ProfilePoint> points = measured_with(fixture.model, truth, {1});
    points[0].ttft_ms.mean = 1000 * fixture.model.ttft_s(1, 300, 300, 150, truth);
    const Calibration calibration = calibrate(fixture.model, points, {0.6, 0.14}, 512, 256);
    EXPECT_NEAR(calibration.efficiency.bandwidth, truth.bandwidth, 1e-6);
    EXPECT_NEAR(calibration.efficiency.compute, truth.compute, 1e-6);
    EXPECT_NE(calibration.method.find("throughput and TTFT"), std::string::npos);
    const double at_16 = fixture.model.at(16, 300, 150, truth).output_tokens_per_s;
    EXPECT_NEAR(fixture.model.at(16, 300, 150, calibration.efficiency).output_tokens_per_s, at_16, 1e-6 * at_16);
}

TEST(PerfModel, SeveralPointsRecoverBothEfficiencies) {
    const Fixture fixture("tinyllama-1.1b", DType::kQ8_0, "cpu");
    const std::vector<ProfilePoint> points = measured_with(fixture.model, {0.45, 0.08}, {1, 4, 16});
    const Calibration calibration = calibrate(fixture.model, points, {0.6, 0.14}, 512, 256);
    EXPECT_NEAR(calibration.efficiency.bandwidth, 0.45, 1e-6);
    EXPECT_NEAR(calibration.efficiency.compute, 0.08, 1e-6);
    // Calibrated on 1 and 16, the model predicts 4 exactly here (the data came from the same model).
    const Calibration two =
        calibrate(fixture.model, measured_with(fixture.model, {0.45, 0.08}, {1, 16}), {0.6, 0.14}, 512, 256);
    EXPECT_NEAR(fixture.model.at(4, 300, 150, two.efficiency).output_tokens_per_s, points[1].output_tokens_per_s, 1e-6);
}

}  // namespace
}  // namespace tern::plan
