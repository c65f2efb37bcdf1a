// The CUDA driver's error path.
//
// Every driver call of the host library, the tool, the tests and the benchmarks goes through
// GPUOS_CU_TRY. A failure throws common::Failure carrying a gpuos_status and a message with the call,
// the driver's own error name and file:line. The C ABI boundary turns it into a status plus
// gpuos_last_error().
#pragma once

#include <string>

#include <cuda.h>

#include "common/error.hpp"

namespace gpuos::detail {

/// Name of a driver result ("CUDA_ERROR_ILLEGAL_ADDRESS"), also when the driver is not loaded.
std::string cu_error_name(CUresult r);
/// Which gpuos_status a driver error maps to (sticky faults -> GPUOS_ERR_DEVICE_FAULT, ...).
gpuos_status status_of(CUresult r);
/// True for the errors that leave the context unusable.
bool is_sticky(CUresult r);

void cu_check(CUresult r, const char* call, const char* file, int line);

}  // namespace gpuos::detail

#define GPUOS_CU_TRY(call) ::gpuos::detail::cu_check((call), #call, __FILE__, __LINE__)
