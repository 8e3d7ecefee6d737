"""The wire: protobuf messages to and from engine values (convert) and one bot's protocol stream (connection)."""
