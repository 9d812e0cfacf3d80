"""A pytest plugin loaded into pymongo's suite by pymongo.sh (`-p pymongo_warnings`).

pymongo's configuration turns every warning into an error, and pytest reports an exception
raised in a finalizer as a warning on whichever test is running when the garbage collector
happens to run the finalizer. pymongo's `client_knobs.__del__` raises when a test that enabled
the knobs failed before disabling them, so one known failure makes some later, unrelated test
fail or pass from run to run. That warning says nothing about the server under test: it is
ignored, and only it (every other unraisable exception still fails its test).
"""


def pytest_configure(config):
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:Exception ignored in.*client_knobs\.__del__:pytest.PytestUnraisableExceptionWarning",
    )
