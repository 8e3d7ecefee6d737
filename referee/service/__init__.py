"""The Referee gRPC service: plays matches for remote clients (server), locked down by its
settings (settings: token, TLS, allowed bots, limits; auth: the token interceptor; records: the
records folder's quota); client opens a channel to it with the token and TLS."""
