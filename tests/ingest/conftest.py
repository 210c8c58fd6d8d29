from tests.store_fixtures import *  # noqa: F401,F403
