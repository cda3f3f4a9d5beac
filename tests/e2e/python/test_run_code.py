"""run_code with the Python client through the in-cluster bridge, in a real pod of the
bed's python image (which carries Debian's numpy and matplotlib)."""

from __future__ import annotations

import struct

from conftest import Cluster, template

import sandpod


def test_run_code_figure_from_a_pod(
    cluster: Cluster, namespace: str, client: sandpod.Client
) -> None:
    cluster.apply(template(namespace, "python"))
    with client.claim("python") as sb:
        sb.run_code("import numpy as np; x = np.arange(3)")
        assert sb.run_code("x.sum()").text == "3"
        ex = sb.run_code(
            "import matplotlib.pyplot as plt\n"
            "plt.figure(figsize=(4, 3), dpi=50)\n"
            "plt.plot(x)\n"
            "import socket; print(socket.gethostname())"
        ).raise_for_error()
        [fig] = [r for r in ex.results if r.png is not None]
        assert fig.png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", fig.png[16:24])
        assert 100 < width <= 200 and 75 < height <= 150
        assert ex.stdout.strip()  # the pod's hostname: it ran there
        ex = sb.run_code("import time; time.sleep(600)", timeout=2)
        assert ex.timed_out and not ex.context_lost
        assert sb.run_code("int(x.sum())").text == "3"
