// An independent, deliberately naive float64 forward pass of the llama (with Mistral's sliding window and Mixtral's
// experts), qwen2, qwen3, qwen3moe, qwen2moe, phi3, gemma2 and gemma3 architectures, written straight from the model
// definitions (Hugging Face modeling_*) over a GgufFile. It shares no compute code with src/model, so agreement
// between the two is evidence that both follow the definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "quant/dequantize.h"

namespace tern::testing {

class ReferenceForward {
public:
    // `context` (0: the file's) picks LongRoPE's long or short factors, as the model's context_length option does.
    explicit ReferenceForward(const GgufFile& file, int64_t context = 0) : file_(file) {
        arch_ = *file.get_string("general.architecture");
        const auto get = [&](const std::string& key) { return *file.get_int(arch_ + "." + key); };
        dim_ = get("embedding_length");
        num_layers_ = get("block_count");
        num_heads_ = get("attention.head_count");
        num_kv_heads_ = get("attention.head_count_kv");
        head_dim_ = file.get_int(arch_ + ".attention.key_length").value_or(dim_ / num_heads_);
        eps_ = *file.get_float(arch_ + ".attention.layer_norm_rms_epsilon");
        base_ = *file.get_float(arch_ + ".rope.freq_base");
        vocab_ = file.find_tensor("token_embd.weight")->dims[1];
        window_ = file.get_int(arch_ + ".attention.sliding_window").value_or(0);
        gemma_ = arch_ == "gemma2" || arch_ == "gemma3";
        // Gemma: scaling = query_pre_attn_scalar^-0.5, the head length in the shapes tested here.
        scale_ = 1.0 / std::sqrt(static_cast<double>(head_dim_));
        if (arch_ == "gemma2") {
            attention_softcap_ = *file.get_float(arch_ + ".attn_logit_softcapping");
            logit_softcap_ = *file.get_float(arch_ + ".final_logit_softcapping");
        }
        linear_factor_ = file.get_float(arch_ + ".rope.scaling.factor").value_or(1.0);
        // Phi-3 LongRoPE (Phi3LongRoPEScaledRotaryEmbedding): inv_freq divided by the long factors past the
        // original context, by the short ones within it; cos and sin times the attention factor.
        const int64_t trained = *file.get_int(arch_ + ".context_length");
        const int64_t original = file.get_int(arch_ + ".rope.scaling.original_context_length").value_or(trained);
        const char* factors = file.find_tensor("rope_freqs.weight") ? "rope_freqs.weight"
                              : (context > 0 ? context : trained) > original ? "rope_factors_long.weight"
                                                                             : "rope_factors_short.weight";
        if (file.find_tensor(factors)) rope_factors_ = vec(factors);
        rope_magnitude_ = file.get_float(arch_ + ".rope.scaling.attn_factor").value_or(1.0);
    }

    // Logits (vocab floats) after each token of `tokens`, positions 0..n-1.
    std::vector<std::vector<double>> run(const std::vector<int32_t>& tokens) const {
        std::vector<std::vector<double>> logits;
        const std::string output = file_.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
        for (const auto& state : normed_hidden(tokens)) logits.push_back(matvec(output, state));
        for (auto& row : logits) {  // Gemma2ForCausalLM: final_logit_softcapping
            for (double& logit : row) {
                if (logit_softcap_ > 0) logit = logit_softcap_ * std::tanh(logit / logit_softcap_);
            }
        }
        return logits;
    }

    // The final RMS-normed hidden state of each token (the output matrix's input), positions 0..n-1.
    std::vector<std::vector<double>> normed_hidden(const std::vector<int32_t>& tokens) const {
        std::vector<std::vector<double>> hidden;
        for (int32_t token : tokens) hidden.push_back(row("token_embd.weight", token));
        for (auto& state : hidden) {  // Gemma: the embedding times sqrt(hidden_size)
            for (double& value : state) value *= gemma_ ? std::sqrt(static_cast<double>(dim_)) : 1.0;
        }
        for (int64_t layer = 0; layer < num_layers_; ++layer) run_layer(layer, hidden);
        for (auto& state : hidden) state = norm(state, vec("output_norm.weight"));
        return hidden;
    }

private:
    std::vector<double> row(const std::string& name, int64_t row_idx) const {
        const GgufTensorInfo* info = file_.find_tensor(name);
        const int64_t length = info->dims[0];
        std::vector<float> values(static_cast<size_t>(length));
        dequantize_row(info->type, info->data + row_idx * row_bytes(info->type, length), values.data(), length);
        return std::vector<double>(values.begin(), values.end());
    }
    std::vector<double> vec(const std::string& name) const { return row(name, 0); }

    // With `expert` >= 0, the product with that expert's matrix of a 3-D tensor.
    std::vector<double> matvec(const std::string& name, const std::vector<double>& x, int64_t expert = -1) const {
        const int64_t rows = file_.find_tensor(name)->dims[1];
        std::vector<double> y(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
            const std::vector<double> w = row(name, r + std::max<int64_t>(expert, 0) * rows);
            for (size_t i = 0; i < x.size(); ++i) y[static_cast<size_t>(r)] += w[i] * x[i];
        }
        if (file_.find_tensor(name.substr(0, name.size() - 6) + "bias")) {
            const std::vector<double> bias = vec(name.substr(0, name.size() - 6) + "bias");
            for (size_t i = 0; i < y.size(); ++i) y[i] += bias[i];
        }
        return y;
    }

    std::vector<double> norm(const std::vector<double>& x, const std::vector<double>& weight) const {
        double sum = 0;
        for (double value : x) sum += value * value;
        const double scale = 1.0 / std::sqrt(sum / static_cast<double>(x.size()) + eps_);
        std::vector<double> out(x.size());
        for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * weight[i];
        return out;
    }

    // down(silu(gate x) * up x), of the dense matrices or (expert >= 0) of one expert's slice of the 3-D tensors.
    std::vector<double> mlp(const std::string& p, const std::string& suffix, const std::vector<double>& x,
                            int64_t expert) const {
        if (arch_ == "phi3") {  // Phi3MLP: gate_up_proj, split gate | up
            const std::vector<double> gate_up = matvec(p + "ffn_up.weight", x);
            const size_t half = gate_up.size() / 2;
            std::vector<double> gate(gate_up.begin(), gate_up.begin() + static_cast<std::ptrdiff_t>(half));
            for (size_t i = 0; i < half; ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * gate_up[half + i];
            return matvec(p + "ffn_down.weight", gate);
        }
        std::vector<double> gate = matvec(p + "ffn_gate" + suffix + ".weight", x, expert);
        const std::vector<double> up = matvec(p + "ffn_up" + suffix + ".weight", x, expert);
        for (size_t i = 0; i < gate.size(); ++i) {
            const double g = gate[i];  // Gemma: gelu_pytorch_tanh; the others SiLU
            const double activated = gemma_ ? 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)))
                                            : g / (1.0 + std::exp(-g));
            gate[i] = activated * up[i];
        }
        return matvec(p + "ffn_down" + suffix + ".weight", gate, expert);
    }

    // Qwen3MoeSparseMoeBlock: softmax over the router's logits, the top experts_used, their weights renormalized;
    // Qwen2MoeSparseMoeBlock: not renormalized, plus a shared expert scaled by sigmoid(x . shared_expert_gate).
    std::vector<double> experts(const std::string& p, const std::vector<double>& x) const {
        const std::vector<double> logits = matvec(p + "ffn_gate_inp.weight", x);
        std::vector<double> probabilities(logits.size());
        const double max = *std::max_element(logits.begin(), logits.end());
        for (size_t e = 0; e < logits.size(); ++e) probabilities[e] = std::exp(logits[e] - max);
        std::vector<size_t> order(logits.size());
        for (size_t e = 0; e < order.size(); ++e) order[e] = e;
        const auto used = static_cast<size_t>(*file_.get_int(arch_ + ".expert_used_count"));
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return probabilities[a] > probabilities[b]; });
        double chosen = 0;
        for (size_t rank = 0; rank < used; ++rank) chosen += probabilities[order[rank]];
        if (arch_ == "qwen2moe") chosen = std::accumulate(probabilities.begin(), probabilities.end(), 0.0);
        std::vector<double> out(x.size());
        for (size_t rank = 0; rank < used; ++rank) {
            const std::vector<double> y = mlp(p, "_exps", x, static_cast<int64_t>(order[rank]));
            for (size_t i = 0; i < out.size(); ++i) out[i] += probabilities[order[rank]] / chosen * y[i];
        }
        if (arch_ == "qwen2moe") {
            const std::vector<double> gate = vec(p + "ffn_gate_inp_shexp.weight");
            const double logit = std::inner_product(x.begin(), x.end(), gate.begin(), 0.0);
            const std::vector<double> y = mlp(p, "_shexp", x, -1);
            for (size_t i = 0; i < out.size(); ++i) out[i] += y[i] / (1.0 + std::exp(-logit));
        }
        return out;
    }

    void norm_heads(std::vector<double>& x, const std::vector<double>& weight) const {
        for (size_t start = 0; start < x.size(); start += static_cast<size_t>(head_dim_)) {
            const std::vector<double> head(x.begin() + static_cast<std::ptrdiff_t>(start),
                                           x.begin() + static_cast<std::ptrdiff_t>(start) + head_dim_);
            const std::vector<double> normed = norm(head, weight);
            std::copy(normed.begin(), normed.end(), x.begin() + static_cast<std::ptrdiff_t>(start));
        }
    }

    // Gemma2: every even layer slides; Gemma3: all but every sixth; Mistral (llama with a window): every layer.
    bool sliding(int64_t layer) const {
        if (window_ <= 0) return false;
        if (arch_ == "gemma2") return layer % 2 == 0;
        if (arch_ == "gemma3") return (layer + 1) % 6 != 0;
        return true;
    }

    // GGUF llama files hold q/k rows permuted so rotation pairs are adjacent; qwen2 keeps Hugging Face's halves.
    // Gemma3's sliding layers use rope_local_base_freq (10000) unscaled, its global ones the scaled base.
    void rope(std::vector<double>& x, int64_t num_heads, int64_t position, int64_t layer) const {
        const bool local = arch_ == "gemma3" && sliding(layer);
        const double base = local ? 10000.0 : base_;
        const double scaled_position = static_cast<double>(position) / (local ? 1.0 : linear_factor_);
        const std::vector<double>& factors = rope_factors_;
        const int64_t half = head_dim_ / 2;
        for (int64_t head = 0; head < num_heads; ++head) {
            double* h = x.data() + head * head_dim_;
            for (int64_t i = 0; i < half; ++i) {
                double frequency = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim_));
                if (!factors.empty()) frequency /= factors[static_cast<size_t>(i)];
                const double angle = scaled_position * frequency;
                const bool halves = arch_ != "llama";
                double& a = halves ? h[i] : h[2 * i];
                double& b = halves ? h[i + half] : h[2 * i + 1];
                const double a0 = a, b0 = b;
                const double cos = rope_magnitude_ * std::cos(angle), sin = rope_magnitude_ * std::sin(angle);
                a = a0 * cos - b0 * sin;
                b = a0 * sin + b0 * cos;
            }
        }
    }

    void run_layer(int64_t layer, std::vector<std::vector<double>>& hidden) const {
        const std::string p = "blk." + std::to_string(layer) + ".";
        std::vector<std::vector<double>> keys, values, queries;
        for (size_t t = 0; t < hidden.size(); ++t) {
            const std::vector<double> x = norm(hidden[t], vec(p + "attn_norm.weight"));
            if (arch_ == "phi3") {  // Phi3Attention: one qkv_proj, split q | k | v
                const std::vector<double> qkv = matvec(p + "attn_qkv.weight", x);
                const auto q_end = qkv.begin() + num_heads_ * head_dim_;
                const auto k_end = q_end + num_kv_heads_ * head_dim_;
                queries.emplace_back(qkv.begin(), q_end);
                keys.emplace_back(q_end, k_end);
                values.emplace_back(k_end, qkv.end());
            } else {
                queries.push_back(matvec(p + "attn_q.weight", x));
                keys.push_back(matvec(p + "attn_k.weight", x));
                values.push_back(matvec(p + "attn_v.weight", x));
            }
            if (arch_ == "qwen3" || arch_ == "qwen3moe" || arch_ == "gemma3") {  // q_norm / k_norm per head, then RoPE
                norm_heads(queries.back(), vec(p + "attn_q_norm.weight"));
                norm_heads(keys.back(), vec(p + "attn_k_norm.weight"));
            }
            rope(queries.back(), num_heads_, static_cast<int64_t>(t), layer);
            rope(keys.back(), num_kv_heads_, static_cast<int64_t>(t), layer);
        }
        for (size_t t = 0; t < hidden.size(); ++t) {
            std::vector<double> attended(static_cast<size_t>(num_heads_ * head_dim_));
            for (int64_t head = 0; head < num_heads_; ++head) {
                const int64_t kv_head = head / (num_heads_ / num_kv_heads_);
                std::vector<double> scores(t + 1, 0.0);
                double max_score = -1e300;
                // The sliding mask: key s is seen when t - s < window.
                const size_t first = sliding(layer) && t + 1 > static_cast<size_t>(window_) ? t + 1 - window_ : 0;
                for (size_t s = first; s <= t; ++s) {
                    double dot = 0;
                    for (int64_t d = 0; d < head_dim_; ++d) {
                        dot += queries[t][static_cast<size_t>(head * head_dim_ + d)] *
                               keys[s][static_cast<size_t>(kv_head * head_dim_ + d)];
                    }
                    scores[s] = dot * scale_;
                    if (attention_softcap_ > 0) scores[s] = attention_softcap_ * std::tanh(scores[s] / attention_softcap_);
                    max_score = std::max(max_score, scores[s]);
                }
                double total = 0;
                for (size_t s = first; s <= t; ++s) total += (scores[s] = std::exp(scores[s] - max_score));
                for (size_t s = first; s <= t; ++s) {
                    for (int64_t d = 0; d < head_dim_; ++d) {
                        attended[static_cast<size_t>(head * head_dim_ + d)] +=
                            scores[s] / total * values[s][static_cast<size_t>(kv_head * head_dim_ + d)];
                    }
                }
            }
            std::vector<double> projected = matvec(p + "attn_output.weight", attended);
            if (gemma_) projected = norm(projected, vec(p + "post_attention_norm.weight"));
            for (size_t i = 0; i < projected.size(); ++i) hidden[t][i] += projected[i];
            const std::vector<double> x = norm(hidden[t], vec(p + "ffn_norm.weight"));
            const bool moe = file_.find_tensor(p + "ffn_gate_inp.weight") != nullptr;
            std::vector<double> down = moe ? experts(p, x) : mlp(p, "", x, -1);
            if (gemma_) down = norm(down, vec(p + "post_ffw_norm.weight"));
            for (size_t i = 0; i < down.size(); ++i) hidden[t][i] += down[i];
        }
    }

    const GgufFile& file_;
    std::string arch_;
    int64_t dim_, num_layers_, num_heads_, num_kv_heads_, head_dim_, vocab_, window_;
    double eps_, base_, scale_, linear_factor_, rope_magnitude_;
    std::vector<double> rope_factors_;
    double attention_softcap_ = 0, logit_softcap_ = 0;
    bool gemma_;
};

}  // namespace tern::testing
