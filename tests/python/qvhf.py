"""qvhf.py — import before `datasets`: gives the Hugging Face tests a
private HF_HOME (removed at exit) and keeps `datasets` offline and quiet,
so no test reads or writes the user's cache or the network."""
import atexit
import os
import shutil
import tempfile

HF_HOME = tempfile.mkdtemp(prefix="quiver-hf-home-")
atexit.register(shutil.rmtree, HF_HOME, True)
os.environ["HF_HOME"] = HF_HOME
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
