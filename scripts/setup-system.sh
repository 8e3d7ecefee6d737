#!/bin/sh
# What the project needs from the system besides Python 3.11: bubblewrap (bwrap) and libseccomp, the
# bot sandbox and its system-call filter (docs/sandbox.md), and Chromium, the browser the web app's
# browser tests drive (Playwright cannot download its own browser builds here). Installs each with
# apt-get when it is missing and this runs as root where apt-get exists (as CI does); otherwise says
# in one line what is missing and carries on: the sandbox then falls back to mode "limits" (or runs
# without its filter) and its tests skip, saying why, and so do the browser tests without Chromium.
# util-linux's setpriv and prlimit, which the sandbox also uses, are part of every Debian system.
# Also the toolchains the compiled starter bots build with (sample_bots/cpp, sample_bots/go): a C++
# compiler, make, pkg-config and gRPC's C++ files; Go with Debian's grpc-go and protobuf sources.
# Without them those kits' tests skip, saying what is missing.
set -u
export DEBIAN_FRONTEND=noninteractive  # apt-get asks nothing
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
# apt_install PACKAGE: quietly, updating the package lists once if the first try fails
apt_install() {
    apt-get install -y -qq "$1" >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$1" >/dev/null 2>&1; }
}
# provide PACKAGE PURPOSE WITHOUT: install a missing PACKAGE, or say what goes WITHOUT it
provide() {
    if can_install; then
        echo "setup: installing $1 for $2 (apt-get install $1)" >&2
        apt_install "$1" || echo "setup: could not install $1; $3" >&2
    else
        echo "setup: $1 is not installed and cannot be installed from here (needs root and apt-get); $3" >&2
    fi
}
has_libseccomp() { { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q 'libseccomp\.so\.2'; }

command -v bwrap >/dev/null 2>&1 ||
    provide bubblewrap "the bot sandbox" "bots will run in sandbox mode \"limits\" (docs/sandbox.md)"
has_libseccomp ||
    provide libseccomp2 "the bots' system-call filter" "bots will run without a system-call filter (docs/sandbox.md)"
# `setup-system.sh sandbox`: only what bots need to run safely (the Quickstart's demo); no argument:
# everything, for the tests too
[ "${1:-all}" = sandbox ] && exit 0
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
    provide chromium "the web app's browser tests" "the browser tests will skip"

# The C++ starter bot: g++, make, pkg-config, protoc with gRPC's C++ plugin, the headers and libraries
cpp_without="the C++ starter bot cannot be built and its test will skip"
command -v g++ >/dev/null 2>&1 || provide g++ "the C++ starter bot" "$cpp_without"
command -v make >/dev/null 2>&1 || provide make "the C++ and Go starter bots" "$cpp_without"
command -v pkg-config >/dev/null 2>&1 || provide pkg-config "the C++ starter bot" "$cpp_without"
command -v grpc_cpp_plugin >/dev/null 2>&1 || provide protobuf-compiler-grpc "the C++ starter bot" "$cpp_without"
[ -f /usr/include/google/protobuf/message.h ] || provide libprotobuf-dev "the C++ starter bot" "$cpp_without"
[ -f /usr/include/grpcpp/grpcpp.h ] || provide libgrpc++-dev "the C++ starter bot" "$cpp_without"

# The Go starter bot, offline: Go, and grpc-go and protobuf as Debian's source packages (GOPATH mode).
# github.com/golang/protobuf must be 1.4 or later (the 1-5 package, installed before grpc-go so that
# apt does not pick 1.3 for it): 1.3 cannot encode the messages protoc-gen-go writes.
go_without="the Go starter bot cannot be built and its test will skip"
gocode=/usr/share/gocode/src
command -v go >/dev/null 2>&1 || provide golang-go "the Go starter bot" "$go_without"
[ -f $gocode/github.com/golang/protobuf/proto/registry.go ] ||
    provide golang-github-golang-protobuf-1-5-dev "the Go starter bot" "$go_without"
[ -d $gocode/google.golang.org/protobuf ] || provide golang-google-protobuf-dev "the Go starter bot" "$go_without"
[ -d $gocode/google.golang.org/grpc ] || provide golang-google-grpc-dev "the Go starter bot" "$go_without"
command -v protoc-gen-go >/dev/null 2>&1 || provide protoc-gen-go "the Go starter bot" "$go_without"
command -v protoc-gen-go-grpc >/dev/null 2>&1 || provide protoc-gen-go-grpc "the Go starter bot" "$go_without"
exit 0
