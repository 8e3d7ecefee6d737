from tests.web.browser_support import browser, page, web_server  # noqa: F401  (fixtures)
from tests.web.web_support import played_db, web  # noqa: F401  (fixtures)
