#pragma once
// DeviceBuffer: one cudaMalloc'd allocation, freed when the owner goes. Move-only. Allocation and
// the synchronous copies below belong to prepare() and read-back, never to a timed run.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "engine/cuda_util/check.hpp"

namespace revgraph::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
        if (bytes_ > 0) cudaCheck(cudaMalloc(&ptr_, bytes_));
    }
    ~DeviceBuffer() {
        if (ptr_ != nullptr) (void)cudaFree(ptr_);  // nothing sensible to do with an error here
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept
        : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            if (ptr_ != nullptr) (void)cudaFree(ptr_);
            ptr_ = std::exchange(o.ptr_, nullptr);
            bytes_ = std::exchange(o.bytes_, 0);
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return ptr_; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(ptr_);
    }
    std::size_t bytes() const { return bytes_; }

    void upload(const void* src, std::size_t bytes) {
        check(bytes);
        if (bytes > 0) cudaCheck(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice));
    }
    // Zeros, then a copy, ordered on `s`: prepare()'s, which never touches the legacy stream or the
    // whole device, so another thread's graph capture is left alone. The caller synchronizes `s`
    // before `src` goes.
    void upload_async(const void* src, std::size_t bytes, cudaStream_t s) {
        check(bytes);
        if (bytes > 0) cudaCheck(cudaMemcpyAsync(ptr_, src, bytes, cudaMemcpyHostToDevice, s));
    }
    void zero_async(cudaStream_t s) {
        if (bytes_ > 0) cudaCheck(cudaMemsetAsync(ptr_, 0, bytes_, s));
    }
    void download(void* dst, std::size_t bytes) const {
        check(bytes);
        if (bytes > 0) cudaCheck(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost));
    }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
    void check(std::size_t bytes) const {
        if (bytes > bytes_)
            throw Error("cuda: copy of " + std::to_string(bytes) + " bytes into a " + std::to_string(bytes_) +
                        "-byte device buffer");
    }
};

}  // namespace revgraph::cuda
