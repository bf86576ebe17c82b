"""`quiver serve`'s page in a real browser: Debian's Chromium driven by
Selenium (headless) loads the page of a generated DatasetDict with images,
audio, ClassLabels and a string holding <script>, checks the first rows
against the data, types a filter (and a bad one: the caret), sorts,
shuffles, jumps to a row, opens an image cell's row detail, draws a
column's statistics, and resizes to a phone width. Screenshots go under
QV_BUILD/serve-screenshots/ and must not be blank (pixel variance; the
table's region differs from the page background). A missing Chromium or
chromedriver fails the test: .ci/run installs them
(scripts/install-deps.sh)."""
import os

import datasets as D
import pyarrow as pa
import pytest

from qvpaths import BUILD, quiver
from qvserve import media_table, png_pixels, region_stats, serve

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = os.path.join(BUILD, "serve-screenshots")
N = 250


@pytest.fixture(scope="module")
def browser():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: run scripts/install-deps.sh"
    assert os.path.exists(CHROMEDRIVER), f"{CHROMEDRIVER} is missing: run scripts/install-deps.sh"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,800", "--force-device-scale-factor=1", "--hide-scrollbars"]:
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_window_size(1280, 800)
    yield d
    d.quit()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    t, pngs = media_table(N)
    small, _ = media_table(12)
    from datasets.table import InMemoryTable
    dd = D.DatasetDict({"train": D.Dataset(InMemoryTable(t)), "test": D.Dataset(InMemoryTable(small))})
    dd.save_to_disk(str(d / "dd"))
    return d / "dd", t


def wait_for(driver, cond, what, timeout=20):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)) \
        .until(lambda d: cond(d), message=what)


def shot(driver, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name + ".png")
    assert driver.save_screenshot(path), path
    img = png_pixels(open(path, "rb").read())
    w, h = img[0], img[1]
    _, var = region_stats(img, 0, 0, w, h)
    assert var > 200, f"{path} looks blank (grey variance {var:.1f})"
    return img


def rows_text(driver, col):
    """The rendered text of column `col`'s cells, read in one go (the table
    may be re-rendered between two element lookups)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#rows td[data-col=\"' + arguments[0] + '\"]'))"
        ".map((td) => td.innerText.trim());", col)


def test_page(browser, data):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    path, t = data
    d = browser
    with serve(path) as (base, _):
        d.get(base + "/")
        wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rows tr")) == 100, "first page")
        # the header: path, rows, splits
        assert "250" in d.find_element(By.ID, "facts").text
        opts = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#split option")]
        assert opts == ["train", "test"]
        # the first rows are the data's, markup shown as text
        ids = rows_text(d, "id")
        assert ids == [str(i) for i in range(100)]
        caps = rows_text(d, "caption")
        want = t.column("caption").to_pylist()
        assert caps[0].startswith("<script>alert('x')</script> caption 0")
        assert all(c.replace(" less", "").replace(" more", "").rstrip("…") in w or w.startswith(c.split("…")[0])
                   for c, w in zip(caps, want[:100]))
        assert d.find_elements(By.CSS_SELECTOR, "#rows script") == []
        assert rows_text(d, "label")[:3] == ["cat (0)", "dog (1)", "bird (2)"]
        # schema with ClassLabel names
        schema = d.find_element(By.ID, "schema").text
        assert "ClassLabel(3 names)" in schema and "0: cat" in schema and "Image" in schema
        # image thumbnails decoded from /api/cell
        wait_for(d, lambda d: d.execute_script(
            "const i = document.querySelector('#rows tr:first-child img');"
            "return i && i.complete && i.naturalWidth === 24;"), "first thumbnail")
        assert d.find_elements(By.CSS_SELECTOR, "#rows tr:first-child audio")
        img = shot(d, "01-first-page-1280")
        r = d.execute_script("const r = document.getElementById('table-wrap').getBoundingClientRect();"
                             "return [r.left, r.top, r.right, r.bottom];")
        bg_mean, _ = region_stats(img, 0, img[1] - 4, 8, img[1])  # page background corner
        tm, tv = region_stats(img, int(r[0]), int(r[1]), int(r[2]), min(int(r[3]), img[1]))
        assert tv > 100 and abs(tm - bg_mean) > 1, (tm, tv, bg_mean)

        # a filter through the expression language
        f = d.find_element(By.ID, "filter")
        f.send_keys("label == 1 and id >= 100", Keys.ENTER)
        expect = [i for i in range(N) if i % 3 == 1 and i >= 100]
        wait_for(d, lambda d: rows_text(d, "id") == [str(i) for i in expect], "filtered rows")
        assert f"of {len(expect)}" in d.find_element(By.ID, "range").text
        assert set(rows_text(d, "label")) == {"dog (1)"}
        # a bad filter: the error with its caret
        f.clear()
        f.send_keys("label == ", Keys.ENTER)
        err = d.find_element(By.ID, "filter-error")
        wait_for(d, lambda d: err.is_displayed(), "filter error")
        assert "^" in err.text and "label ==" in err.text
        shot(d, "02-filter-error")
        f.clear()
        f.send_keys(Keys.ENTER)
        wait_for(d, lambda d: not err.is_displayed() and rows_text(d, "id")[:2] == ["0", "1"],
                 "filter cleared")

        # sort by clicking a header (descending on the second click)
        hdr = d.find_element(By.CSS_SELECTOR, "#head th:nth-child(2) button")  # id
        hdr.click()
        hdr = d.find_element(By.CSS_SELECTOR, "#head th:nth-child(2) button")
        hdr.click()
        wait_for(d, lambda d: rows_text(d, "id")[:3] == ["249", "248", "247"], "sorted desc")
        # shuffle with a seed: the rows of `quiver shuffle --seed 3`
        d.find_element(By.ID, "seed").send_keys("3")
        d.find_element(By.ID, "shuffle").click()
        out = str(path) + "-shuffled"
        quiver("shuffle", path, "--split", "train", "--seed", 3, "-o", out)
        import json
        want_ids = [str(json.loads(l)["id"]) for l in
                    quiver("head", out, "-n", 100).stdout.decode().splitlines()]
        wait_for(d, lambda d: rows_text(d, "id") == want_ids, "shuffled rows")
        d.find_element(By.ID, "reset").click()
        wait_for(d, lambda d: rows_text(d, "id")[:2] == ["0", "1"], "reset")

        # jump to a row on another page
        j = d.find_element(By.ID, "jump")
        j.send_keys("217", Keys.ENTER)
        wait_for(d, lambda d: d.execute_script(
            "const s = document.querySelector('#rows tr.sel'); return s && s.dataset.row;") == "217",
            "jumped to 217")
        assert "rows 200–249 of 250" in d.find_element(By.ID, "range").text
        sel = d.find_element(By.CSS_SELECTOR, "#rows tr.sel td[data-col='id']")
        assert sel.text == "217"
        # keyboard: j moves down, Enter opens the detail, Esc closes it
        d.find_element(By.TAG_NAME, "body").send_keys("j")
        wait_for(d, lambda d: d.find_element(By.CSS_SELECTOR, "#rows tr.sel td[data-col='id']").text
                 == "218", "j moved")
        d.switch_to.active_element.send_keys(Keys.ENTER)
        det = d.find_element(By.ID, "detail")
        wait_for(d, lambda d: det.is_displayed(), "detail by keyboard")
        assert "Row 218" in d.find_element(By.ID, "detail-title").text
        d.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait_for(d, lambda d: not det.is_displayed(), "detail closed")

        # open an image cell: the row detail with the full image
        cell = d.find_element(By.CSS_SELECTOR, "#rows tr[data-row='210'] td[data-col='image'] img")
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
        cell.click()
        wait_for(d, lambda d: det.is_displayed(), "detail by click")
        wait_for(d, lambda d: d.execute_script(
            "const i = document.querySelector('#detail-body img');"
            "return i && i.complete && i.naturalWidth === 24;"), "detail image")
        body = d.find_element(By.ID, "detail-body").text
        assert "caption 210" in body and "cat (0)" in body  # 210 % 3 == 0
        assert rows_text(d, "label")[10] == "cat (0)"
        shot(d, "03-row-detail")
        d.find_element(By.ID, "detail-close").click()
        wait_for(d, lambda d: not det.is_displayed(), "detail closed by button")

        # statistics of a column drawn as a chart
        d.find_element(By.CSS_SELECTOR, "button[aria-label='statistics of id']").click()
        wait_for(d, lambda d: d.find_element(By.ID, "stats-state").text == "done", "stats done")
        assert len(d.find_elements(By.CSS_SELECTOR, "#stats-body svg rect")) == 20
        d.find_element(By.CSS_SELECTOR, "button[aria-label='statistics of label']").click()
        wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#stats-body .topv li")) == 3,
                 "label stats")
        assert "cat (0)" in d.find_element(By.ID, "stats-body").text
        shot(d, "04-stats-1280")

        # the other split
        from selenium.webdriver.support.ui import Select
        Select(d.find_element(By.ID, "split")).select_by_value("test")
        wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rows tr")) == 12, "test split")

        # a phone width: one column, nothing wider than the screen
        d.set_window_size(390, 844)
        wait_for(d, lambda d: d.execute_script("return window.innerWidth") <= 400, "resized")
        assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        assert d.find_element(By.ID, "table").is_displayed()
        img = shot(d, "05-phone-390")
        d.set_window_size(1280, 800)
