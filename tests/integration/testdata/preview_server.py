"""A stdlib-only server for the port-preview tests, run inside a sandbox.

http PORT [DELAY]: GET / (hello), /big?n=BYTES (a deterministic stream),
/headers (the request's headers as JSON), /slow (a chunk every 100 ms,
forever), /ws (a WebSocket echo). tcp PORT: an echo server.
"""

import base64
import hashlib
import http.server
import json
import socketserver
import struct
import sys
import time

BLOCK = bytes(range(256)) * 256  # 64 KiB
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/":
            self.reply(b"hello from the sandbox\n")
        elif path == "/cookie":
            self.send_response(200)
            self.send_header("Set-Cookie", "planted=1; Domain=preview.localhost; Path=/")
            self.send_header("Set-Cookie", "own=2; Path=/; HttpOnly")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/headers":
            self.reply(json.dumps(dict(self.headers.items())).encode(), "application/json")
        elif path == "/big":
            n = int(query.split("=", 1)[1]) if "=" in query else 50 << 20
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            sent = 0
            while sent < n:
                chunk = BLOCK[: min(len(BLOCK), n - sent)]
                self.wfile.write(chunk)
                sent += len(chunk)
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                self.wfile.write(b"6\r\ntick.\n\r\n")
                time.sleep(0.1)
        elif path == "/ws":
            self.websocket()
        else:
            self.send_error(404)

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"] + WS_GUID
        accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            op, n = head[0] & 0x0F, head[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if n < 126:
                out = bytes([0x80 | op, n])
            elif n < 65536:
                out = bytes([0x80 | op, 126]) + struct.pack(">H", n)
            else:
                out = bytes([0x80 | op, 127]) + struct.pack(">Q", n)
            self.wfile.write(out + data)
            self.wfile.flush()
            if op == 8:
                return


class HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(65536):
            self.request.sendall(data)


class TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3:
        time.sleep(float(sys.argv[3]))
    if mode == "tcp":
        TCPServer(("127.0.0.1", port), Echo).serve_forever()
    else:
        HTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
