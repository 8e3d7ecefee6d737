"""The Referee gRPC service: plays matches for remote clients (server)."""
