"""The torch suite (ctest python.torch, run in build/venv-torch made by
scripts/venv-torch.sh) shares the helpers of tests/python (qvpaths, qvhf)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import conftest as _python_conftest  # noqa: E402,F401  (XDG cache setup of the Python suites)
