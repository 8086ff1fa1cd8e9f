// A minimal PNG reader for screenshot tests: 8-bit RGB or RGBA, non-interlaced (what Chromium writes), decoded
// with zlib into RGB pixels.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace tern::testing {

struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;  // row-major, 3 bytes a pixel

    const uint8_t* at(int x, int y) const { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }
};

inline uint32_t read_be32(const std::string& data, size_t at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(data[at])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(data[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(data[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<uint8_t>(data[at + 3]));
}

inline uint8_t paeth(int a, int b, int c) {
    const int p = a + b - c;
    const int pa = std::abs(p - a);
    const int pb = std::abs(p - b);
    const int pc = std::abs(p - c);
    if (pa <= pb && pa <= pc) return static_cast<uint8_t>(a);
    return static_cast<uint8_t>(pb <= pc ? b : c);
}

// Reverses the per-scanline filters (PNG spec section 9) in place.
inline bool unfilter(std::vector<uint8_t>* raw, int width, int height, int channels, std::vector<uint8_t>* out) {
    const size_t stride = static_cast<size_t>(width) * channels;
    if (raw->size() != (stride + 1) * height) return false;
    out->assign(stride * height, 0);
    for (int row = 0; row < height; ++row) {
        const uint8_t filter = (*raw)[row * (stride + 1)];
        const uint8_t* in = raw->data() + row * (stride + 1) + 1;
        uint8_t* line = out->data() + row * stride;
        const uint8_t* prev = row > 0 ? line - stride : nullptr;
        for (size_t idx = 0; idx < stride; ++idx) {
            const int a = idx >= static_cast<size_t>(channels) ? line[idx - channels] : 0;
            const int b = prev != nullptr ? prev[idx] : 0;
            const int c = prev != nullptr && idx >= static_cast<size_t>(channels) ? prev[idx - channels] : 0;
            int value = in[idx];
            switch (filter) {
                case 0: break;
                case 1: value += a; break;
                case 2: value += b; break;
                case 3: value += (a + b) / 2; break;
                case 4: value += paeth(a, b, c); break;
                default: return false;
            }
            line[idx] = static_cast<uint8_t>(value);
        }
    }
    return true;
}

inline std::optional<RgbImage> read_png(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (data.size() < 33 || data.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return std::nullopt;
    RgbImage image;
    int channels = 0;
    std::string compressed;
    for (size_t at = 8; at + 12 <= data.size();) {
        const uint32_t length = read_be32(data, at);
        const std::string type = data.substr(at + 4, 4);
        if (at + 12 + length > data.size()) return std::nullopt;
        if (type == "IHDR") {
            image.width = static_cast<int>(read_be32(data, at + 8));
            image.height = static_cast<int>(read_be32(data, at + 12));
            const int depth = static_cast<uint8_t>(data[at + 16]);
            const int color = static_cast<uint8_t>(data[at + 17]);
            const int interlace = static_cast<uint8_t>(data[at + 20]);
            if (depth != 8 || interlace != 0 || (color != 2 && color != 6)) return std::nullopt;
            channels = color == 2 ? 3 : 4;
        } else if (type == "IDAT") {
            compressed += data.substr(at + 8, length);
        }
        at += 12 + length;
    }
    if (channels == 0 || image.width <= 0 || image.height <= 0) return std::nullopt;
    std::vector<uint8_t> raw((static_cast<size_t>(image.width) * channels + 1) * image.height);
    uLongf raw_size = raw.size();
    if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(compressed.data()), compressed.size()) != Z_OK ||
        raw_size != raw.size()) {
        return std::nullopt;
    }
    std::vector<uint8_t> pixels;
    if (!unfilter(&raw, image.width, image.height, channels, &pixels)) return std::nullopt;
    image.rgb.reserve(static_cast<size_t>(image.width) * image.height * 3);
    for (size_t idx = 0; idx < pixels.size(); idx += channels) {
        image.rgb.insert(image.rgb.end(), pixels.begin() + idx, pixels.begin() + idx + 3);
    }
    return image;
}

}  // namespace tern::testing
