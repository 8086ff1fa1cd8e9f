#include "formats/gguf_writer.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/partial_files.h"

namespace tern {

uint32_t llama_file_type(DType weight_type) {
    switch (weight_type) {
        case DType::kF16: return 1;
        case DType::kQ4_0: return 2;
        case DType::kQ4_1: return 3;
        case DType::kQ8_0: return 7;
        case DType::kQ5_0: return 8;
        case DType::kQ5_1: return 9;
        case DType::kQ2_K: return 10;
        case DType::kQ3_K: return 12;
        case DType::kQ4_K: return 14;
        case DType::kQ5_K: return 16;
        case DType::kQ6_K: return 18;
        case DType::kBF16: return 32;
        default: return 0;
    }
}
namespace {

using EmitFn = std::function<void(const void*, size_t)>;

template <typename T>
void emit_pod(const EmitFn& emit, T value) {
    emit(&value, sizeof(value));
}

void emit_string(const EmitFn& emit, const std::string& text) {
    emit_pod<uint64_t>(emit, text.size());
    emit(text.data(), text.size());
}

uint64_t align_up(uint64_t offset, uint64_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

GgufValue scalar(GgufType type) {
    GgufValue value;
    value.type = type;
    return value;
}

}  // namespace

void GgufWriter::set_alignment(uint32_t alignment) {
    TERN_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0) << "alignment must be a power of two";
    alignment_ = alignment;
    add_u32("general.alignment", alignment);
}

void GgufWriter::add(std::string key, GgufValue value) {
    for (auto& entry : metadata_) {
        if (entry.first == key) {
            entry.second = std::move(value);
            return;
        }
    }
    metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_string(std::string key, std::string text) {
    GgufValue value = scalar(GgufType::kString);
    value.string_value = std::move(text);
    add(std::move(key), std::move(value));
}

void GgufWriter::add_u32(std::string key, uint32_t number) {
    GgufValue value = scalar(GgufType::kU32);
    value.int_value = number;
    add(std::move(key), std::move(value));
}

void GgufWriter::add_i32(std::string key, int32_t number) {
    GgufValue value = scalar(GgufType::kI32);
    value.int_value = number;
    add(std::move(key), std::move(value));
}

void GgufWriter::add_f32(std::string key, float number) {
    GgufValue value = scalar(GgufType::kF32);
    value.float_value = number;
    add(std::move(key), std::move(value));
}

void GgufWriter::add_bool(std::string key, bool flag) {
    GgufValue value = scalar(GgufType::kBool);
    value.int_value = flag ? 1 : 0;
    add(std::move(key), std::move(value));
}

void GgufWriter::add_string_array(std::string key, const std::vector<std::string>& items) {
    GgufValue value = scalar(GgufType::kArray);
    value.array_type = GgufType::kString;
    value.array.reserve(items.size());
    for (const std::string& item : items) {
        GgufValue element = scalar(GgufType::kString);
        element.string_value = item;
        value.array.push_back(std::move(element));
    }
    add(std::move(key), std::move(value));
}

void GgufWriter::add_f32_array(std::string key, const std::vector<float>& items) {
    GgufValue value = scalar(GgufType::kArray);
    value.array_type = GgufType::kF32;
    for (float item : items) {
        GgufValue element = scalar(GgufType::kF32);
        element.float_value = item;
        value.array.push_back(std::move(element));
    }
    add(std::move(key), std::move(value));
}

void GgufWriter::add_i32_array(std::string key, const std::vector<int32_t>& items) {
    GgufValue value = scalar(GgufType::kArray);
    value.array_type = GgufType::kI32;
    for (int32_t item : items) {
        GgufValue element = scalar(GgufType::kI32);
        element.int_value = item;
        value.array.push_back(std::move(element));
    }
    add(std::move(key), std::move(value));
}

void GgufWriter::add_tensor(std::string name, DType type, std::vector<int64_t> dims, FillFn fill) {
    TERN_CHECK(!dims.empty() && dims.size() <= 4) << "tensor " << name << " needs 1 to 4 dimensions";
    int64_t num_elements = 1;
    for (int64_t dim : dims) num_elements *= dim;
    TERN_CHECK(dims[0] % dtype_traits(type).block_size == 0) << "tensor " << name << " row does not fit the block";
    const int64_t num_bytes = row_bytes(type, dims[0]) * (num_elements / dims[0]);
    tensors_.push_back({std::move(name), type, std::move(dims), num_bytes, std::move(fill)});
}

void GgufWriter::add_tensor_bytes(std::string name, DType type, std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
    auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    add_tensor(std::move(name), type, std::move(dims), [shared](uint8_t* dst) {
        std::memcpy(dst, shared->data(), shared->size());
    });
}

void GgufWriter::emit_value(const GgufValue& value, const EmitFn& emit) const {
    switch (value.type) {
        case GgufType::kU8: case GgufType::kBool: return emit_pod<uint8_t>(emit, static_cast<uint8_t>(value.int_value));
        case GgufType::kI8: return emit_pod<int8_t>(emit, static_cast<int8_t>(value.int_value));
        case GgufType::kU16: return emit_pod<uint16_t>(emit, static_cast<uint16_t>(value.int_value));
        case GgufType::kI16: return emit_pod<int16_t>(emit, static_cast<int16_t>(value.int_value));
        case GgufType::kU32: return emit_pod<uint32_t>(emit, static_cast<uint32_t>(value.int_value));
        case GgufType::kI32: return emit_pod<int32_t>(emit, static_cast<int32_t>(value.int_value));
        case GgufType::kU64: return emit_pod<uint64_t>(emit, static_cast<uint64_t>(value.int_value));
        case GgufType::kI64: return emit_pod<int64_t>(emit, value.int_value);
        case GgufType::kF32: return emit_pod<float>(emit, static_cast<float>(value.float_value));
        case GgufType::kF64: return emit_pod<double>(emit, value.float_value);
        case GgufType::kString: return emit_string(emit, value.string_value);
        case GgufType::kArray:
            emit_pod<uint32_t>(emit, static_cast<uint32_t>(value.array_type));
            emit_pod<uint64_t>(emit, value.array.size());
            for (const GgufValue& item : value.array) emit_value(item, emit);
            return;
    }
}

void GgufWriter::emit_header(const EmitFn& emit) const {
    emit("GGUF", 4);
    emit_pod<uint32_t>(emit, 3);
    emit_pod<uint64_t>(emit, tensors_.size());
    emit_pod<uint64_t>(emit, metadata_.size());
    for (const auto& [key, value] : metadata_) {
        emit_string(emit, key);
        emit_pod<uint32_t>(emit, static_cast<uint32_t>(value.type));
        emit_value(value, emit);
    }
    uint64_t offset = 0;
    for (const PendingTensor& tensor : tensors_) {
        emit_string(emit, tensor.name);
        emit_pod<uint32_t>(emit, static_cast<uint32_t>(tensor.dims.size()));
        for (int64_t dim : tensor.dims) emit_pod<uint64_t>(emit, static_cast<uint64_t>(dim));
        emit_pod<uint32_t>(emit, static_cast<uint32_t>(tensor.type));
        emit_pod<uint64_t>(emit, offset);
        offset = align_up(offset + static_cast<uint64_t>(tensor.num_bytes), alignment_);
    }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out;
    const EmitFn emit = [&](const void* data, size_t size) {
        const uint8_t* bytes = static_cast<const uint8_t*>(data);
        out.insert(out.end(), bytes, bytes + size);
    };
    emit_header(emit);
    out.resize(align_up(out.size(), alignment_), 0);
    for (const PendingTensor& tensor : tensors_) {
        const size_t start = out.size();
        out.resize(start + static_cast<size_t>(tensor.num_bytes));
        tensor.fill(out.data() + start);
        out.resize(align_up(out.size(), alignment_), 0);
    }
    return out;
}

Status GgufWriter::write(const std::string& path) const {
    const PartialFile partial(fmt::format("{}.partial-{}", path, ::getpid()));
    Status written = write_file(partial.path());
    if (written.is_ok() && std::rename(partial.path().c_str(), path.c_str()) != 0) {
        written = invalid_argument(fmt::format("{}: cannot replace: {}", path, std::strerror(errno)));
    }
    if (!written.is_ok()) std::remove(partial.path().c_str());
    return written;
}

Status GgufWriter::write_file(const std::string& path) const {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!file) return invalid_argument(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
    uint64_t written = 0;
    int write_errno = 0;  // the first failure's: a disk that is full stays full, later calls may say otherwise
    const EmitFn emit = [&](const void* data, size_t size) {
        if (size != 0 && write_errno == 0 && std::fwrite(data, 1, size, file.get()) != size) write_errno = errno;
        written += size;
    };
    const std::vector<uint8_t> zeros(alignment_, 0);
    const auto pad = [&] { emit(zeros.data(), align_up(written, alignment_) - written); };
    emit_header(emit);
    pad();
    std::vector<uint8_t> buffer;
    for (const PendingTensor& tensor : tensors_) {
        buffer.assign(static_cast<size_t>(tensor.num_bytes), 0);
        tensor.fill(buffer.data());
        emit(buffer.data(), buffer.size());
        pad();
    }
    if (write_errno == 0 && std::fclose(file.release()) != 0) write_errno = errno;
    if (write_errno != 0) {
        return internal_error(fmt::format("{}: write failed: {}", path, std::strerror(write_errno)));
    }
    return Status::ok();
}

}  // namespace tern
