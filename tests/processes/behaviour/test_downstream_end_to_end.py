"""The downstream service (infra/downstream.py) running: nginx with its echo module answers after the
delay and counts its calls."""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

from orchestrator.core import downstream_api
from orchestrator.core.httpclient import request
from orchestrator.infra import downstream
from orchestrator.infra.procs import stop_pid


def test_calls_answer_after_the_delay_and_are_counted():
    """Each call's body and delay, a bad call refused, and the counters the evidence reads: calls
    (less the polls) and calls in flight at once."""
    port, folder = 29390, Path(tempfile.mkdtemp(prefix="bench-test-downstream-"))   # where nobody reaches it
    pid = downstream.start(folder, port, ["127.0.0.1"], 50, "0", None, False, "127.0.0.1")
    try:
        reader = downstream_api.StatusReader("127.0.0.1", port)
        before = reader.read()
        r = request(port, "GET", "/call?i=7")
        assert (r.status, r.media_type, json.loads(r.body)) == (200, "application/json", {"call": 7})
        assert request(port, "GET", "/call?i=x").status == 404
        assert request(port, "GET", "/other").status == 404
        took = []
        for ms in (0, 20, 200):
            t0 = time.perf_counter()
            assert request(port, "GET", f"/call?i=1&ms={ms}").status == 200
            took.append(1000 * (time.perf_counter() - t0))
        # nginx's timers fire on its millisecond clock: a call never ends before its delay
        assert took[1] >= 20 and took[2] >= 200, took
        peak = [0]
        done = threading.Event()

        def poll():
            while not done.is_set():
                peak[0] = max(peak[0], reader.read().in_flight)
        poller = threading.Thread(target=poll)
        poller.start()
        calls = [threading.Thread(target=request, args=(port, "GET", "/call?i=1&ms=500")) for _ in range(4)]
        for c in calls:
            c.start()
        for c in calls:
            c.join()
        done.set()
        poller.join()
        assert peak[0] == 4
        # three answered calls, the bad one and /other (requests too), three timed, four at once
        assert reader.read().calls - before.calls == 3 + 3 + 4
    finally:
        stop_pid(pid, grace=2)
        shutil.rmtree(folder)
