"""The referee: plays Royal Casino games between bots over gRPC (docs/architecture.md)."""

import os as _os

# gRPC's EventEngine off, for this process and the bots it starts (they inherit it), unless the
# environment already says otherwise: it took a fifth off the referee's CPU per play and a quarter
# off the bare round trip, and lost no game in the suite (docs/benchmarks.md, "gRPC's EventEngine
# off"). gRPC reads it when it is first imported, so it is set here, before any module imports it;
# the Python SDK imports the engine (this package) before gRPC, so its bots get it too.
GRPC_EXPERIMENTS = "-event_engine_client,-event_engine_listener"
_os.environ.setdefault("GRPC_EXPERIMENTS", GRPC_EXPERIMENTS)

# gRPC's fork handlers off, unless the environment says otherwise: the referee's processes fork only
# to start a program (a bot, a build: exec follows at once) or the in-process pool's workers (which
# use no gRPC), and uvloop starts programs with fork() rather than vfork(), on which gRPC's handlers
# ran and wrote "Other threads are currently calling into gRPC, skipping fork() handlers" to stderr
# amid the command's own (JSON) log lines.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
