// SIGTERM and SIGINT taken in ordinary (not handler) context: block them in main before any thread
// starts (every thread inherits the mask), then wait for one where the process can act on it.
#pragma once

#include <signal.h>

#include <string>

namespace tj {

// {SIGTERM, SIGINT}: the signals that stop a process of the job.
sigset_t ShutdownSignalSet();

// Blocks SIGTERM and SIGINT in the calling thread and returns the set. Call first thing in main.
sigset_t BlockShutdownSignals();

// Blocks until one of `signals` arrives; returns its number.
int WaitForSignal(const sigset_t& signals);

// The address a server listens on for the address its peers dial: an IP literal (127.0.0.1:port,
// [::1]:port) is bound as is; a DNS name (a Kubernetes Service, "job-ps-0.ns.svc:2222") cannot be
// bound, so the port is bound on every interface.
std::string ListenAddressFor(const std::string& dial_address);

}  // namespace tj
