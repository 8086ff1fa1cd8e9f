#include "plan/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

namespace tern::plan {
namespace {

double nearest_rank(const std::vector<double>& sorted, double percentile) {
    const double rank = std::ceil(percentile / 100.0 * static_cast<double>(sorted.size()));
    const size_t idx = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
    return sorted[idx];
}

// Parses "IN OUT" / "IN,OUT"; false when the line holds anything else.
bool parse_length_line(std::string line, double* input, double* output) {
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream stream(line);
    int64_t input_tokens = -1, output_tokens = -1;
    std::string extra;
    if (!(stream >> input_tokens >> output_tokens) || (stream >> extra)) return false;
    if (input_tokens < 0 || output_tokens < 0 || input_tokens + output_tokens == 0) return false;
    *input = static_cast<double>(input_tokens);
    *output = static_cast<double>(output_tokens);
    return true;
}

}  // namespace

LengthStats length_stats(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    LengthStats stats;
    stats.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    stats.p50 = nearest_rank(values, 50);
    stats.p95 = nearest_rank(values, 95);
    stats.p99 = nearest_rank(values, 99);
    return stats;
}

Status read_length_file(const std::string& path, Workload* workload) {
    std::ifstream in(path);
    if (!in) return not_found(fmt::format("{}: cannot open the length file", path));
    std::vector<double> inputs, outputs, totals;
    std::string line;
    for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
        const size_t comment = line.find('#');
        if (comment != std::string::npos) line.resize(comment);
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        double input = 0, output = 0;
        if (!parse_length_line(line, &input, &output)) {
            return invalid_argument(
                fmt::format("{}:{}: expected \"INPUT_TOKENS OUTPUT_TOKENS\" (two non-negative "
                            "integers, not both zero), got \"{}\"",
                            path, line_number, line));
        }
        inputs.push_back(input);
        outputs.push_back(output);
        totals.push_back(input + output);
    }
    if (inputs.empty()) return invalid_argument(fmt::format("{}: no request lengths in the file", path));
    workload->input = length_stats(inputs);
    workload->output = length_stats(outputs);
    workload->total = length_stats(totals);
    workload->lengths_source = "length file";
    return Status::ok();
}

}  // namespace tern::plan
