"""hfdata.py — datasets built with Hugging Face `datasets` that cover every
feature type quiver models, shared by the interoperability tests
(test_hf_interop.py: datasets -> quiver; test_hf_export.py: quiver ->
datasets).

It imports qvhf first (private, offline HF_HOME) so `datasets` never sees
the user's cache.

  MAIN_FEATURES / main_rows(n): Value of several dtypes, ClassLabel (with
      -1), Sequence (variable, fixed length, of a dict), List of ClassLabel,
      LargeList, Array2D / Array3D (dynamic first dimension), nested dicts;
  media_dataset(n): Image / Audio / Video with bytes, and a ClassLabel;
  translation_dataset(n): Translation, TranslationVariableLanguages;
  DTYPES / dtypes_dataset(n): one Value column per pyarrow dtype datasets
      names, with nulls;
  all_features_dataset(n), translation_features_dataset(n): the above side
      by side in two datasets (every feature type between them).
The defaults give the sizes test_hf_interop.py checks.
"""
import datetime
import decimal

import qvhf  # noqa: F401  (private offline HF_HOME, before datasets)

import datasets as D  # noqa: E402
import numpy as np  # noqa: E402

MAIN_FEATURES = D.Features({
    "i8": D.Value("int8"),
    "u64": D.Value("uint64"),
    "f32": D.Value("float32"),
    "f64": D.Value("float64"),
    "flag": D.Value("bool"),
    "text": D.Value("string"),
    "big_text": D.Value("large_string"),
    "blob": D.Value("binary"),
    "ts": D.Value("timestamp[ms, tz=UTC]"),
    "day": D.Value("date32"),
    "label": D.ClassLabel(names=["neg", "pos", "neutral"]),
    "seq": D.Sequence(D.Value("int32")),
    "pair": D.Sequence(D.Value("float64"), length=2),
    "spans": D.Sequence({"start": D.Value("int32"), "tag": D.Value("string")}),
    "ner": D.List(D.ClassLabel(names=["O", "B-PER", "I-PER"])),
    "big": D.LargeList(D.Value("int64")),
    "m2": D.Array2D(shape=(2, 3), dtype="int32"),
    "m3": D.Array3D(shape=(None, 2, 2), dtype="float32"),
    "meta": {"ok": D.Value("bool"), "words": [D.Value("string")],
             "inner": {"score": D.Value("float64")}},
})

N_MAIN = 23


def main_rows(n=N_MAIN):
    rows = []
    for i in range(n):
        rows.append({
            "i8": (i * 37) % 256 - 128,
            "u64": 2**63 - 1 - i,
            "f32": i / 10,
            "f64": i / 3,
            "flag": i % 3 == 0,
            "text": f"row {i} – café ✓ 🐍",
            "big_text": "x" * i,
            "blob": bytes(range(i % 7)),
            "ts": datetime.datetime(2021, 3, 4, 5, 6, 7, 8000 * (i % 100),
                                    tzinfo=datetime.timezone.utc),
            "day": datetime.date(2000, 1, 1) + datetime.timedelta(days=i * 40),
            "label": (i % 4) - 1,  # -1 (no label), 0, 1, 2
            "seq": list(range(i % 5)),
            "pair": [i * 0.5, -i * 0.25],
            "spans": {"start": list(range(i % 3)), "tag": ["t%d" % k for k in range(i % 3)]},
            "ner": [k % 3 for k in range(i % 4)],
            "big": [i] * (i % 3),
            "m2": np.arange(6, dtype=np.int32).reshape(2, 3) * i,
            "m3": np.full((i % 3 + 1, 2, 2), i, dtype=np.float32),
            "meta": {"ok": i % 2 == 1, "words": ["w"] * (i % 2), "inner": {"score": i * 1.5}},
        })
    return rows


def main_dataset(n=N_MAIN):
    return D.Dataset.from_list(main_rows(n), features=MAIN_FEATURES)


def media_dataset(n=5):
    blob = {"bytes": D.Value("binary"), "path": D.Value("string")}
    plain = D.Features({"img": blob, "aud": blob, "vid": blob,
                        "label": D.ClassLabel(names=["cat", "dog"])})
    rows = {"img": [{"bytes": b"\x89PNG" + bytes([i % 256]), "path": None} for i in range(n)],
            "aud": [{"bytes": b"RIFF" + bytes([i % 256]), "path": None} for i in range(n)],
            "vid": [{"bytes": b"\x00\x00\x00\x18ftyp" + bytes([i % 256]), "path": f"v{i}.mp4"}
                    for i in range(n)],
            "label": [i % 2 for i in range(n)]}
    ds = D.Dataset.from_dict(rows, features=plain)
    # cast_column goes through cast_storage: no Pillow / torchcodec needed
    return (ds.cast_column("img", D.Image())
              .cast_column("aud", D.Audio(sampling_rate=16000))
              .cast_column("vid", D.Video(decode=False)))


def translation_dataset(n=2):
    f = D.Features({"tr": D.Translation(languages=["fr", "en", "de"]),
                    "tvl": D.TranslationVariableLanguages(languages=["fr", "en"])})
    tr = [{"fr": "chat", "en": "cat", "de": "Katze"}, {"fr": "chien", "en": "dog", "de": "Hund"}]
    tvl = [{"fr": ["le chat", "la chatte"], "en": "the cat"}, {"en": "a dog"}]
    for i in range(2, n):
        tr.append({"fr": f"chat {i}", "en": f"cat {i}", "de": f"Katze {i}"})
        tvl.append({"fr": [f"le chat {i}"] * (i % 3), "en": f"the cat {i}"} if i % 2
                   else {"en": f"cat {i}"})
    return D.Dataset.from_dict({"tr": tr[:n], "tvl": tvl[:n]}, features=f)


DTYPES = ["null", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float16", "float32", "float64", "time32[s]", "time32[ms]", "time64[us]",
          "time64[ns]", "timestamp[s]", "timestamp[us]", "timestamp[ns, tz=UTC]",
          "timestamp[ms, tz=Europe/Paris]", "date32", "date64", "duration[s]", "duration[ns]",
          "decimal128(10, 2)", "decimal256(40, 6)", "binary", "large_binary", "string",
          "large_string", "fixed_size_binary[3]"]


def dtypes_dataset(n=3):
    """Every row i with i % 3 == 1 is null in every column; the others hold
    one sample value per dtype."""
    t = datetime.datetime(2022, 2, 3, 4, 5, 6)
    sample = {
        "null": None, "bool": True, "int8": -5, "int16": -300, "int32": 70000, "int64": -2**40,
        "uint8": 250, "uint16": 65000, "uint32": 2**32 - 1, "uint64": 2**62 + 7,
        "float16": 1.5, "float32": 0.1, "float64": 2.5e-300,
        "time32[s]": datetime.time(1, 2, 3), "time32[ms]": datetime.time(1, 2, 3, 4000),
        "time64[us]": datetime.time(23, 59, 59, 999999), "time64[ns]": datetime.time(0, 0, 1),
        "timestamp[s]": t, "timestamp[us]": t, "timestamp[ns, tz=UTC]": t,
        "timestamp[ms, tz=Europe/Paris]": t, "date32": t.date(), "date64": t.date(),
        "duration[s]": datetime.timedelta(seconds=90),
        "duration[ns]": datetime.timedelta(microseconds=5),
        "decimal128(10, 2)": decimal.Decimal("12345678.91"),
        "decimal256(40, 6)": decimal.Decimal("-1.000001"),
        "binary": b"\x00\xff", "large_binary": b"abc", "string": "s", "large_string": "L",
        "fixed_size_binary[3]": b"xyz",
    }
    feats = D.Features({f"c{i}": D.Value(d) for i, d in enumerate(DTYPES)})
    data = {f"c{i}": [None if r % 3 == 1 else sample[d] for r in range(n)]
            for i, d in enumerate(DTYPES)}
    return D.Dataset.from_dict(data, features=feats)


def all_features_dataset(n):
    """One Dataset of n rows with the main, media and dtypes columns side by
    side (the media dataset's ClassLabel renamed 'animal'). The Translation
    columns are in translation_features_dataset: datasets 5.2.0 cannot save
    a dataset holding both (save_to_disk's size estimate walks the table
    when a media column is present, and fails on a Translation struct)."""
    parts = [main_dataset(n), media_dataset(n).rename_column("label", "animal"),
             dtypes_dataset(n)]
    return D.concatenate_datasets(parts, axis=1)


def translation_features_dataset(n):
    """n rows: a few main columns (numbers, ClassLabel, text) beside
    Translation and TranslationVariableLanguages."""
    main = main_dataset(n).select_columns(["i8", "f64", "label", "text"])
    return D.concatenate_datasets([main, translation_dataset(n)], axis=1)


# ---------------------------------------------------------------------------
# A small dataset for the operation oracles (test_dataset_oracle.py,
# test_pyext.py, test_pyext_map.py): ids, unicode text, a ClassLabel, a
# float with nulls (and NaN unless nan=False), a Sequence of int32.

SMALL_FEATURES = D.Features({
    "id": D.Value("int64"),
    "text": D.Value("string"),
    "label": D.ClassLabel(names=["neg", "pos", "neutral"]),
    "score": D.Value("float64"),
    "tags": D.Sequence(D.Value("int32")),
})


def small_rows(n, seed=7, nan=True):
    """Columns of SMALL_FEATURES for n rows, deterministic in seed."""
    import random
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "déjà", "日本語", "x", "longer words here", "émoji 🙂"]
    rows = {"id": [], "text": [], "label": [], "score": [], "tags": []}
    for i in range(n):
        rows["id"].append(i)
        rows["text"].append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))))
        rows["label"].append(rng.randint(0, 2))
        r = rng.random()
        score = None if r < 0.1 else round(rng.uniform(-5, 5), 2)
        rows["score"].append(float("nan") if nan and 0.1 <= r < 0.15 else score)
        rows["tags"].append([rng.randint(0, 9) for _ in range(rng.randint(0, 4))])
    return rows
