"""A page opened in headless Chromium (Debian's ``chromium``), driven over the DevTools protocol
with ``websocket-client``: the tests ask the page itself what it shows (its images, decoded or not;
where a plot sits) and take screenshots of it, instead of guessing where a plot lands in a
screenshot of a fixed window."""
from __future__ import annotations

import base64
import contextlib
import itertools
import json
import pathlib
import shutil
import subprocess
import tempfile
import time
import urllib.request

WINDOW = (1280, 1000)


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, socket):
        self._socket = socket
        self._ids = itertools.count(1)

    def call(self, method: str, **params) -> dict:
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:  # events arrive in between; only the answer to this call matters
            message = json.loads(self._socket.recv())
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: pathlib.Path) -> None:
        """Load a file and wait until it and its images have loaded; :class:`FileNotFoundError`
        when the browser could not load it (``net::ERR_FILE_NOT_FOUND``)."""
        navigated = self.call("Page.navigate", url=path.resolve().as_uri())
        if navigated.get("errorText"):
            raise FileNotFoundError(f"{path}: {navigated['errorText']}")
        deadline = time.monotonic() + 60
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not load in 60 s")
            time.sleep(0.1)

    def screenshot(self, target: pathlib.Path, clip: dict | None = None) -> pathlib.Path:
        """A PNG of the window, or of ``clip`` ({x, y, width, height} in page coordinates)."""
        params = {"format": "png", "captureBeyondViewport": clip is not None}
        if clip:
            params["clip"] = {**clip, "scale": 1}
        target.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return target


@contextlib.contextmanager
def chromium_page(binary: str):
    """A headless Chromium with one blank page; closed on exit."""
    import websocket

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    proc = subprocess.Popen(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--remote-debugging-port=0", f"--user-data-dir={profile}",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", "--force-device-scale-factor=1", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        port = _devtools_port(pathlib.Path(profile) / "DevToolsActivePort", proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            target = next(t for t in json.load(answer) if t["type"] == "page")
        socket = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=60,
                                             suppress_origin=True)
        try:
            yield Page(socket)
        finally:
            socket.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(port_file: pathlib.Path, proc: subprocess.Popen) -> int:
    """The port Chromium chose (``--remote-debugging-port=0``): the first line of the file it
    writes into its profile once it listens."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with code {proc.returncode} at start")
        if port_file.exists() and port_file.read_text().strip():
            return int(port_file.read_text().splitlines()[0])
        time.sleep(0.1)
    raise TimeoutError("chromium did not open its DevTools port in 30 s")


def non_white_share(png: pathlib.Path, threshold: int = 240) -> float:
    """The share of pixels darker than ``threshold`` in any channel: 0 for a blank image."""
    from PIL import Image, ImageChops

    with Image.open(png) as image:
        red, green, blue = image.convert("RGB").split()
        darkest = ImageChops.darker(ImageChops.darker(red, green), blue)  # each pixel's lowest channel
        histogram = darkest.histogram()
        return sum(histogram[:threshold]) / max(sum(histogram), 1)
