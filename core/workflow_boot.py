"""The program a workflow script runs in: `python -I -c BOOT script.py IN OUT ARGS`, inside a
read-only sandbox. It loads the script, gives its `main(ctx)` the context, and turns each
`ctx.agent(...)` into a request on the descriptor OUT that Piton answers on IN (one JSON line each).
The script itself can read the project and compute; everything that changes anything is an agent's
work, under the session's rules. Kept as source text: it runs where Piton's package is not imported.
"""

from __future__ import annotations

BOOT = r'''
import asyncio, itertools, json, os, runpy, sys

path, incoming, outgoing = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class WorkflowError(Exception):
    """An agent the workflow asked for failed, or its budget is spent."""


class Context:
    def __init__(self, args):
        self.args = args
        self._ids = itertools.count(1)
        self._waiting = {}
        self._buffer = b""

    def _send(self, message):
        os.write(outgoing, (json.dumps(message) + "\n").encode())

    async def _call(self, op, **fields):
        number = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._waiting[number] = future
        self._send({"id": number, "op": op, **fields})
        return await future

    def _readable(self):
        chunk = os.read(incoming, 65536)
        if not chunk:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(WorkflowError("Piton stopped the workflow"))
            asyncio.get_running_loop().remove_reader(incoming)
            return
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            reply = json.loads(line)
            future = self._waiting.pop(reply["id"], None)
            if future is not None and not future.done():
                future.set_result(reply)

    async def agent(self, prompt, *, type="general-purpose", name=None, worktree=False):
        """Run an agent on `prompt`; its report."""
        reply = await self._call("agent", prompt=prompt, type=type, name=name, worktree=bool(worktree))
        if not reply.get("ok"):
            raise WorkflowError(reply.get("error", "the agent failed"))
        return reply["report"]

    async def parallel(self, *work):
        """Run agents (ctx.agent(...) calls, or any awaitables) at once; their results in order."""
        if len(work) == 1 and isinstance(work[0], (list, tuple)):
            work = tuple(work[0])
        return list(await asyncio.gather(*work))

    async def pipeline(self, steps, first=""):
        """Each step an agent on the step's prompt, `{input}` in it the last step's report."""
        text = first
        for step in steps:
            prompt = step(text) if callable(step) else str(step).replace("{input}", text)
            text = await self.agent(prompt)
        return text

    def phase(self, name):
        """Name the part of the work that starts now (shown as progress)."""
        self._send({"op": "phase", "name": str(name)})

    def log(self, text):
        self._send({"op": "log", "text": str(text)})


async def _run(context):
    asyncio.get_running_loop().add_reader(incoming, context._readable)
    found = runpy.run_path(path, run_name="__workflow__")
    main = found.get("main")
    if main is None:
        raise WorkflowError(f"{path} defines no `async def main(ctx)`")
    return await main(context)


context = Context(json.loads(sys.argv[4]))
try:
    result = asyncio.run(_run(context))
except BaseException as e:
    context._send({"op": "failed", "error": f"{type(e).__name__}: {e}"})
    raise SystemExit(1)
context._send({"op": "done", "result": "" if result is None else str(result)})
'''
