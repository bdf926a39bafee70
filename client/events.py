"""Following a job's Server-Sent Events (``GET /v1/jobs/{id}/events``) for the client.

:func:`parse` turns the lines of a ``text/event-stream`` into events;
:func:`follow` reads a job's stream, reconnecting with ``Last-Event-ID``
when the server ends it early, until the terminal event.  It returns False
whenever the stream cannot be used (an error answer, another media type, a
broken connection), and :meth:`sca_client.Client.wait` then polls instead.
HTTP goes through the client's ``requests`` session, imported lazily.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from urllib.parse import quote

TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass
class Event:
    id: str | None
    event: str
    data: dict
    retry: int | None = None


def parse(lines):
    """Events from the decoded lines of a stream (comments and unknown fields skipped)."""
    event_id, name, data, retry = None, "message", [], None
    for line in lines:
        if line == "":
            if data or retry is not None:
                try:
                    payload = json.loads("\n".join(data)) if data else {}
                except ValueError:
                    payload = {"text": "\n".join(data)}
                yield Event(event_id, name, payload, retry)
            event_id, name, data, retry = None, "message", [], None
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            event_id = value
        elif field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "retry" and value.isdigit():
            retry = int(value)


def follow(client, job_id: str, on_event, deadline: float | None = None) -> bool:
    """Call ``on_event(event)`` for each event of the job until its terminal one
    (True), or until the stream fails (False).  Raises ``TimeoutError`` past
    ``deadline`` (``time.monotonic()``)."""
    import requests  # the client extra, as in sca_client.client

    path = f"{client.url}/v1/jobs/{quote(job_id, safe='')}/events"
    last_id, retry = None, 2.0
    while True:
        headers = {"Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        read = client.timeout
        if deadline is not None:
            read = max(0.1, min(read, deadline - time.monotonic()))
        try:
            with client.session.get(
                path, headers=headers, stream=True, timeout=(client.timeout, read)
            ) as response:
                if response.status_code != 200 or not response.headers.get(
                    "Content-Type", ""
                ).startswith("text/event-stream"):
                    return False
                response.encoding = "utf-8"
                for event in parse(response.iter_lines(decode_unicode=True)):
                    if event.retry is not None:
                        retry = event.retry / 1000
                    if event.id:
                        last_id = event.id
                    if event.event != "message":
                        on_event(event)
                    if event.event in TERMINAL:
                        return True
        except requests.RequestException as exc:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} not finished in time") from exc
            if isinstance(exc, requests.exceptions.Timeout) or _timed_out(exc):
                continue  # a stream silent past the read timeout: open it again
            return False
        # The server ended the stream before the job ended (its time limit): resume.
        if deadline is not None and time.monotonic() + retry >= deadline:
            raise TimeoutError(f"job {job_id} not finished in time")
        time.sleep(retry)


def _timed_out(exc) -> bool:
    return "timed out" in str(exc).lower()
