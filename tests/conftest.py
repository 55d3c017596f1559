"""Suite-wide settings: under CI (CI=true) hypothesis draws a fixed sequence of examples, so a
landing run is reproducible; locally every run explores new examples."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
