"""Celery's Redis transport and result backend, riding out a full Redis.

When Redis's memory reaches ``maxmemory`` (policy ``noeviction``) it refuses
writes with ``OOM command not allowed``, which kombu and Celery treat as fatal
in two places:

* the transport takes a task off its queue (``BRPOP``), then records it as
  unacknowledged (``QoS.append``: ``ZADD`` + ``HSET``).  Refused, that error
  escaped the consumer ("Unrecoverable error: OutOfMemoryError": the worker
  exited) and the task, already off the queue, was lost.  :class:`QoS` hands
  the task to the worker anyway, without the record that would redeliver it
  if this worker died (the heartbeat takeover of :mod:`sca_worker.heartbeat`
  still resumes its job once Redis has room); ``broker_channel_error_retry``
  (:mod:`sca_worker.celery_app`) makes any other refused write restart the
  consumer instead of ending the worker.
* the result backend stores the results of the chord's header
  (``sca.ensemble_run``) and counts them (a Lua script); refused, the chord
  never completed and its job stayed running.  :class:`RedisBackend` retries
  the result (Celery's ``result_backend_always_retry``) as it does a lost
  connection, and counts again (the script skips a result it already has)
  while Redis is full, for ``SCA_STORE_FULL_WAIT`` seconds at most.

Celery already retries, as its ``task_publish_retry_policy`` says, the
publishing of the next stage that Redis refused; :mod:`sca_worker.tasks` waits
for room before publishing the first.
"""

from __future__ import annotations

import logging

from celery.backends.redis import RedisBackend as CeleryRedisBackend
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

from .capacity import with_room
from .problems import store_full

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def append(self, message, delivery_tag):
        try:
            super().append(message, delivery_tag)
        except Exception as exc:
            if not store_full(exc):
                raise
            log.warning(
                "Redis is full: task %s received without its redelivery record",
                message.properties.get("correlation_id", delivery_tag),
            )
            virtual.QoS.append(self, message, delivery_tag)


class Channel(kombu_redis.Channel):
    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel


class RedisBackend(CeleryRedisBackend):
    """Celery's Redis result backend, as an app's ``backend_cls`` (Celery then
    passes no URL: it is ``result_backend``'s)."""

    def __init__(self, *args, url=None, **kwargs):
        super().__init__(*args, url=url or kwargs["app"].conf.result_backend, **kwargs)

    def exception_safe_to_retry(self, exc):
        return super().exception_safe_to_retry(exc) or store_full(exc)

    def on_chord_part_return(self, request, state, result, **kwargs):
        def count():
            return super(RedisBackend, self).on_chord_part_return(request, state, result, **kwargs)

        def give_up(exc):  # the task fails: sca_worker.tasks fails its job saying why
            raise exc

        return with_room(
            count, give_up, self.app.sca_settings["SCA_STORE_FULL_WAIT"], f"chord {request.group}"
        )


#: The name Celery's ``broker_transport`` takes.
TRANSPORT = f"{__name__}:Transport"
