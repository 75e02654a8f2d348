package nccl

import (
	"fmt"
	"strings"
)

// Result is an ncclResult_t. Its Error method needs no library, so errors
// read the same before NCCL is loaded (or when it never loads).
type Result int32

// ncclResult_t values from the public nccl.h.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7 // non-blocking communicators (NCCL ≥ 2.14)
	Timeout            Result = 8 // recent headers only
)

var resultText = [...]struct{ name, text string }{
	Success:            {"ncclSuccess", "no error"},
	UnhandledCudaError: {"ncclUnhandledCudaError", "a call to cuda failed"},
	SystemError:        {"ncclSystemError", "a system call or the network failed"},
	InternalError:      {"ncclInternalError", "internal error in nccl"},
	InvalidArgument:    {"ncclInvalidArgument", "invalid argument"},
	InvalidUsage:       {"ncclInvalidUsage", "invalid usage (wrong call order or mismatched calls across ranks)"},
	RemoteError:        {"ncclRemoteError", "a remote rank failed or the network between ranks broke"},
	InProgress:         {"ncclInProgress", "operation in progress"},
	Timeout:            {"ncclTimeout", "operation timed out"},
}

// Name is the C enumerator name ("ncclSystemError").
func (r Result) Name() string {
	if r >= 0 && int(r) < len(resultText) {
		return resultText[r].name
	}
	return fmt.Sprintf("ncclResult(%d)", int32(r))
}

// Error reads "ncclSystemError (2): a system call or the network failed".
func (r Result) Error() string {
	if r >= 0 && int(r) < len(resultText) {
		return fmt.Sprintf("%s (%d): %s", resultText[r].name, int32(r), resultText[r].text)
	}
	return fmt.Sprintf("unknown nccl result %d", int32(r))
}

// callError wraps a failed call's Result with the call's name and the
// library's last-error text, when it has one. errors.Is(err, SystemError)
// and errors.As(err, &result) see the Result.
func callError(call string, r Result, lastError string) error {
	lastError = strings.TrimSpace(lastError)
	if lastError == "" {
		return fmt.Errorf("nccl: %s: %w", call, r)
	}
	return fmt.Errorf("nccl: %s: %w; last error: %s", call, r, lastError)
}
