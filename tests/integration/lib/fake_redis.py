"""fake_redis.py - a hostile stand-in for Redis, for cluster.sh.

Usage:
    python3 tests/integration/lib/fake_redis.py SOCKET COUNTFILE

Listens on the Unix socket SOCKET and answers each connection in turn
with one kind of trouble, cycling: silence (the connection stays open,
nothing is ever answered), a well-formed reply of the wrong shape (an
array of two integers), an error reply, a reply cut off in the middle
followed by a close, 1 MB of garbage, and an immediate close. The number
of connections accepted is written to COUNTFILE after each one. Stops on
SIGTERM.
"""

import asyncio
import os
import signal
import sys

WRONG_SHAPE = b"*2\r\n:1\r\n:2\r\n"
ERROR = b"-ERR sync script refused by the fake\r\n"
CUT = b"*6\r\n:3\r\n*1\r\n:"
GARBAGE = b"\x00\xff" * (512 * 1024)


async def session(state, reader, writer):
    state["n"] += 1
    kind = (state["n"] - 1) % 6
    tmp = state["count"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{state['n']}\n")
    os.replace(tmp, state["count"])
    try:
        if kind == 5:
            return
        await reader.read(65536)  # the first command (AUTH or EVAL)
        if kind == 0:
            while await reader.read(65536):
                pass  # silent: read and never answer
            return
        elif kind == 1:
            writer.write(WRONG_SHAPE)
        elif kind == 2:
            writer.write(ERROR)
        elif kind == 3:
            writer.write(CUT)
        elif kind == 4:
            writer.write(GARBAGE)
        await writer.drain()
        await asyncio.sleep(0.2)
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main():
    path, count = sys.argv[1], sys.argv[2]
    state = {"n": 0, "count": count}
    server = await asyncio.start_unix_server(
        lambda r, w: session(state, r, w), path=path
    )
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(
        signal.SIGTERM, stop.set_result, None
    )
    with open(count, "w") as f:
        f.write("0\n")
    async with server:
        await stop


asyncio.run(main())
