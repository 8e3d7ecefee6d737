from tests.web.web_support import played_db, web  # noqa: F401  (fixtures)
