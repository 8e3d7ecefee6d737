"""Storage: the tables (models), their migrations, data access (store) and the run lease (lease)."""
