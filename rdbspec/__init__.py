"""rdbspec: reads Redis, Valkey and Dragonfly RDB dumps."""
