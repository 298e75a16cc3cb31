"""The embedded llama.cpp server, run as a child process of the one that uses it.

``python -m four.invoke._llama_child SETTINGS_JSON`` loads the model into an
``xllamacpp.Server`` on a port the kernel picks on 127.0.0.1, writes one JSON line with
its address to standard output, and then serves until its standard input reaches end
of file. The parent holds the other end of that pipe and nobody else does (it is not
inherited), so the server ends when the parent does, however the parent ends: a normal
exit, Ctrl-C, an uncaught exception, or SIGKILL.
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    settings = json.loads(argv[1])
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = settings["path"]
    params.model_alias = {settings["model"]}  # a set: a plain string is a set of letters
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the kernel's choice: no race for a port with other processes
    params.n_parallel = settings["parallel"]
    params.n_ctx = settings["ctx"] * settings["parallel"]  # llama.cpp splits it among slots
    params.use_jinja = True  # the chat template the GGUF file carries
    params.cpuparams.n_threads = settings["threads"]
    params.cpuparams_batch.n_threads = settings["threads"]
    params.sampling.temp = 0.0  # each request sends its own temperature and seed
    params.n_predict = settings["max_tokens"]
    try:
        server = xllamacpp.Server(params)  # returns once the model is loaded and listening
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    print(json.dumps({"address": server.listening_address}), flush=True)
    while os.read(0, 4096):  # until the parent's end of the pipe closes
        pass
    os._exit(0)  # at once: no waiting for the server's threads


if __name__ == "__main__":
    sys.exit(main(sys.argv))
