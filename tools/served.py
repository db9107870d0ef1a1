"""The service as the measuring tools run it (tools/db-read-flood.py, tools/connection-flood.py):
a binary served on 127.0.0.1:PORT with an admin key of the tool's, its log in a scratch
directory, stopped when the `with` block ends. Python's standard library only."""

import hashlib
import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

KEY = "flood-key"


class Service:
    def __init__(self, binary, port, database_url=None, preexec_fn=None):
        self.base = f"http://127.0.0.1:{port}"
        self.scratch = tempfile.mkdtemp()
        self.log_path = os.path.join(self.scratch, "serve.log")
        url = database_url or "sqlite://" + os.path.join(self.scratch, "flood.sqlite3")
        config = os.path.join(self.scratch, "flood.toml")
        with open(config, "w") as f:
            digest = hashlib.sha256(KEY.encode()).hexdigest()
            f.write(f'[[auth.keys]]\nname = "flood"\nrole = "admin"\nsha256 = "{digest}"\n')
        self.command = [binary, "serve", "--config", config, "--addr", f"127.0.0.1:{port}",
                        "--database-url", url]
        self.preexec_fn = preexec_fn

    def __enter__(self):
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(self.command, stdout=self.log,
                                        stderr=subprocess.STDOUT, preexec_fn=self.preexec_fn)
        for _ in range(100):
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        return self

    def __exit__(self, *_):
        self.process.terminate()
        self.process.wait()
        self.log.close()

    def request(self, method, path, body=None, timeout=60):
        """(status, body bytes) of one request with the admin key, on a connection of its own."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}
        req = urllib.request.Request(self.base + path, method=method, data=data,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
