// The float forward pass that gathers activation statistics for calibration, and their GGUF storage. It is a plain
// reference computation (dequantized weights, f32 arithmetic): calibration runs once per model, so clarity wins.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "formats/gguf_writer.h"
#include "model/hparams.h"
#include "quant/dequantize.h"
#include "quantize/calibration.h"

namespace tern {
namespace {

using Floats = std::vector<float>;

// y[t][o] = sum_i x[t][i] * w[o][i] (+ bias[o]); w has `out` rows of `in`.
Floats matmul(const Floats& x, const Floats& w, const Floats* bias, int64_t tokens, int64_t in, int64_t out,
              ThreadPool* pool) {
    Floats y(static_cast<size_t>(tokens * out));
    pool->parallel_for(out, [&](int64_t begin, int64_t end, int) {
        for (int64_t o = begin; o < end; ++o) {
            const float* row = w.data() + o * in;
            for (int64_t t = 0; t < tokens; ++t) {
                const float* xt = x.data() + t * in;
                float sum = 0.0f;
                for (int64_t i = 0; i < in; ++i) sum += xt[i] * row[i];
                y[static_cast<size_t>(t * out + o)] = sum + (bias != nullptr ? (*bias)[static_cast<size_t>(o)] : 0.0f);
            }
        }
    });
    return y;
}

Floats rms_norm(const Floats& x, const Floats& weight, int64_t tokens, int64_t dim, float eps) {
    Floats y(x.size());
    for (int64_t t = 0; t < tokens; ++t) {
        double sum = 0.0;
        for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(x[t * dim + i]) * x[t * dim + i];
        const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(dim)) + eps);
        for (int64_t i = 0; i < dim; ++i) y[t * dim + i] = x[t * dim + i] * scale * weight[i];
    }
    return y;
}

void accumulate(const Floats& x, int64_t tokens, int64_t dim, ChannelStats* stats) {
    stats->sum_abs.resize(static_cast<size_t>(dim), 0.0);
    stats->sum_squares.resize(static_cast<size_t>(dim), 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < dim; ++i) {
            const double value = x[t * dim + i];
            stats->sum_abs[i] += std::abs(value);
            stats->sum_squares[i] += value * value;
        }
    }
}

void apply_rope(const HParams& hp, Floats* x, int64_t tokens, int64_t num_heads) {
    const int64_t half = hp.rope_dim / 2;
    for (int64_t t = 0; t < tokens; ++t) {
        const double position = static_cast<double>(t) * hp.rope_position_scale;
        for (int64_t h = 0; h < num_heads; ++h) {
            float* head = x->data() + (t * num_heads + h) * hp.head_dim;
            for (int64_t i = 0; i < half; ++i) {
                const double theta =
                    position * std::pow(hp.rope_freq_base, -2.0 * static_cast<double>(i) / hp.rope_dim);
                const int64_t a = hp.rope_style == RopeStyle::kHalves ? i : 2 * i;
                const int64_t b = hp.rope_style == RopeStyle::kHalves ? i + half : 2 * i + 1;
                const float c = static_cast<float>(std::cos(theta)), s = static_cast<float>(std::sin(theta));
                const float va = head[a], vb = head[b];
                head[a] = va * c - vb * s;
                head[b] = va * s + vb * c;
            }
        }
    }
}

Floats attention(const HParams& hp, const Floats& q, const Floats& k, const Floats& v, int64_t tokens) {
    const int64_t group = hp.num_heads / hp.num_kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    Floats out(static_cast<size_t>(tokens * hp.q_dim()), 0.0f);
    Floats scores(static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t h = 0; h < hp.num_heads; ++h) {
            const float* qh = q.data() + (t * hp.num_heads + h) * hp.head_dim;
            const int64_t kv_head = h / group;
            float max_score = -INFINITY;
            for (int64_t s = 0; s <= t; ++s) {
                const float* ks = k.data() + (s * hp.num_kv_heads + kv_head) * hp.head_dim;
                float dot = 0.0f;
                for (int64_t d = 0; d < hp.head_dim; ++d) dot += qh[d] * ks[d];
                scores[s] = dot * scale;
                max_score = std::max(max_score, scores[s]);
            }
            double total = 0.0;
            for (int64_t s = 0; s <= t; ++s) total += (scores[s] = std::exp(scores[s] - max_score));
            float* oh = out.data() + (t * hp.num_heads + h) * hp.head_dim;
            for (int64_t s = 0; s <= t; ++s) {
                const float p = static_cast<float>(scores[s] / total);
                const float* vs = v.data() + (s * hp.num_kv_heads + kv_head) * hp.head_dim;
                for (int64_t d = 0; d < hp.head_dim; ++d) oh[d] += p * vs[d];
            }
        }
    }
    return out;
}

class FloatModel {
public:
    FloatModel(const GgufFile& file, HParams hp) : file_(file), hp_(std::move(hp)) {}

    Status load() {
        for (const GgufTensorInfo& tensor : file_.tensors()) {
            if (!can_dequantize(tensor.type)) {
                return invalid_argument(fmt::format("{}: tensor '{}' has type {}, which tern cannot dequantize",
                                                    file_.path(), tensor.name, dtype_name(tensor.type)));
            }
            if (tensor.name.find("output") == 0) continue;  // the head's logits are not needed
            weights_[tensor.name] = tensor_floats(tensor);
        }
        for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight"}) {
            if (weights_.count(name) == 0)
                return invalid_argument(fmt::format("{}: no tensor '{}'", file_.path(), name));
        }
        return Status::ok();
    }

    void run(std::span<const int32_t> window, ActivationStats* stats, ThreadPool* pool) {
        const int64_t tokens = static_cast<int64_t>(window.size());
        const int64_t dim = hp_.embedding_dim;
        Floats x(static_cast<size_t>(tokens * dim));
        const Floats& embd = weights_.at("token_embd.weight");
        for (int64_t t = 0; t < tokens; ++t) std::memcpy(&x[t * dim], &embd[window[t] * dim], dim * sizeof(float));
        for (int64_t layer = 0; layer < hp_.num_layers; ++layer) {
            const std::string prefix = fmt::format("blk.{}.", layer);
            Floats h = rms_norm(x, at(prefix + "attn_norm.weight"), tokens, dim, hp_.rms_norm_eps);
            accumulate(h, tokens, dim, &stats->inputs[prefix + "attn_in"]);
            Floats q =
                matmul(h, at(prefix + "attn_q.weight"), find(prefix + "attn_q.bias"), tokens, dim, hp_.q_dim(), pool);
            Floats k =
                matmul(h, at(prefix + "attn_k.weight"), find(prefix + "attn_k.bias"), tokens, dim, hp_.kv_dim(), pool);
            const Floats v =
                matmul(h, at(prefix + "attn_v.weight"), find(prefix + "attn_v.bias"), tokens, dim, hp_.kv_dim(), pool);
            apply_rope(hp_, &q, tokens, hp_.num_heads);
            apply_rope(hp_, &k, tokens, hp_.num_kv_heads);
            const Floats attn = attention(hp_, q, k, v, tokens);
            const Floats o = matmul(attn, at(prefix + "attn_output.weight"), nullptr, tokens, hp_.q_dim(), dim, pool);
            for (size_t idx = 0; idx < x.size(); ++idx) x[idx] += o[idx];
            h = rms_norm(x, at(prefix + "ffn_norm.weight"), tokens, dim, hp_.rms_norm_eps);
            accumulate(h, tokens, dim, &stats->inputs[prefix + "ffn_in"]);
            Floats gate = matmul(h, at(prefix + "ffn_gate.weight"), nullptr, tokens, dim, hp_.ffn_dim, pool);
            const Floats up = matmul(h, at(prefix + "ffn_up.weight"), nullptr, tokens, dim, hp_.ffn_dim, pool);
            for (size_t idx = 0; idx < gate.size(); ++idx)
                gate[idx] = gate[idx] / (1.0f + std::exp(-gate[idx])) * up[idx];
            accumulate(gate, tokens, hp_.ffn_dim, &stats->inputs[prefix + "down_in"]);
            const Floats down = matmul(gate, at(prefix + "ffn_down.weight"), nullptr, tokens, hp_.ffn_dim, dim, pool);
            for (size_t idx = 0; idx < x.size(); ++idx) x[idx] += down[idx];
        }
        stats->num_tokens += tokens;
    }

private:
    const Floats& at(const std::string& name) const {
        static const Floats kEmpty;
        const auto found = weights_.find(name);
        return found == weights_.end() ? kEmpty : found->second;
    }
    const Floats* find(const std::string& name) const {
        const auto found = weights_.find(name);
        return found == weights_.end() ? nullptr : &found->second;
    }

    const GgufFile& file_;
    HParams hp_;
    std::map<std::string, Floats> weights_;
};

Status check_layer_tensors(const GgufFile& file, const HParams& hp) {
    for (int64_t layer = 0; layer < hp.num_layers; ++layer) {
        for (const char* suffix :
             {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}) {
            const std::string name = fmt::format("blk.{}.{}.weight", layer, suffix);
            if (file.find_tensor(name) == nullptr) {
                return invalid_argument(fmt::format("{}: calibration needs tensor '{}'", file.path(), name));
            }
        }
    }
    return Status::ok();
}

}  // namespace

std::vector<float> tensor_floats(const GgufTensorInfo& tensor) {
    std::vector<float> values(static_cast<size_t>(tensor.num_elements));
    const int64_t row_length = tensor.dims.empty() ? tensor.num_elements : tensor.dims[0];
    const int64_t stride = row_bytes(tensor.type, row_length);
    for (int64_t row = 0; row < tensor.num_elements / row_length; ++row) {
        dequantize_row(tensor.type, tensor.data + row * stride, values.data() + row * row_length, row_length);
    }
    return values;
}

Result<ActivationStats> collect_activation_stats(const GgufFile& file, std::span<const int32_t> tokens, int64_t context,
                                                 int32_t bos_id, ThreadPool* pool) {
    TERN_ASSIGN_OR_RETURN(HParams hp, hparams_from_gguf(file));
    TERN_RETURN_IF_ERROR(check_layer_tensors(file, hp));
    if (context < 2 || static_cast<int64_t>(tokens.size()) < context) {
        return invalid_argument(
            fmt::format("calibration text has {} tokens; it needs at least one window of {}", tokens.size(), context));
    }
    for (int32_t token : tokens) {
        if (token < 0 || token >= hp.vocab_size)
            return invalid_argument(fmt::format("token id {} out of range", token));
    }
    FloatModel model(file, hp);
    TERN_RETURN_IF_ERROR(model.load());
    ActivationStats stats;
    std::vector<int32_t> window(static_cast<size_t>(context));
    for (size_t start = 0; start + context <= tokens.size(); start += static_cast<size_t>(context)) {
        std::copy(tokens.begin() + start, tokens.begin() + start + context, window.begin());
        if (bos_id >= 0) window[0] = bos_id;
        model.run(window, &stats, pool);
    }
    return stats;
}

Status save_activation_stats(const ActivationStats& stats, const std::string& path) {
    GgufWriter writer;
    writer.add_string("general.architecture", "tern-calib");
    writer.add_u32("tern.calib.num_tokens", static_cast<uint32_t>(stats.num_tokens));
    for (const auto& [key, channel] : stats.inputs) {
        for (const auto& [suffix, values] :
             {std::pair{".sum_abs", &channel.sum_abs}, std::pair{".sum_squares", &channel.sum_squares}}) {
            std::vector<uint8_t> bytes(values->size() * sizeof(float));
            for (size_t idx = 0; idx < values->size(); ++idx) {
                const float value = static_cast<float>((*values)[idx]);
                std::memcpy(bytes.data() + idx * sizeof(float), &value, sizeof(float));
            }
            writer.add_tensor_bytes(key + suffix, DType::kF32, {static_cast<int64_t>(values->size())},
                                    std::move(bytes));
        }
    }
    return writer.write(path);
}

Result<ActivationStats> load_activation_stats(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path));
    const std::optional<int64_t> num_tokens = file->get_int("tern.calib.num_tokens");
    if (file->get_string("general.architecture") != "tern-calib" || !num_tokens || *num_tokens <= 0) {
        return invalid_argument(fmt::format("{} is not a tern calibration statistics file", path));
    }
    ActivationStats stats;
    stats.num_tokens = *num_tokens;
    for (const GgufTensorInfo& tensor : file->tensors()) {
        const size_t dot = tensor.name.rfind('.');
        if (tensor.type != DType::kF32 || dot == std::string::npos) {
            return invalid_argument(fmt::format("{}: unexpected tensor '{}'", path, tensor.name));
        }
        const std::string suffix = tensor.name.substr(dot);
        ChannelStats& channel = stats.inputs[tensor.name.substr(0, dot)];
        std::vector<double>* target = suffix == ".sum_abs" ? &channel.sum_abs : &channel.sum_squares;
        const std::vector<float> values = tensor_floats(tensor);
        target->assign(values.begin(), values.end());
    }
    return stats;
}

}  // namespace tern
