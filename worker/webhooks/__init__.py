"""Webhooks: a job's summary POSTed to its ``callback_url`` when it finishes.

* :mod:`~sca_worker.webhooks.addresses`: which URLs may be called; a URL is
  parsed and resolved once, every spelling of an address normalised, and
  refused at submission and again at each delivery;
* :mod:`~sca_worker.webhooks.client`: one request, to the checked address,
  whole within ``SCA_WEBHOOK_TIMEOUT``;
* :mod:`~sca_worker.webhooks.deliveries`: what is sent and signed, and what
  each attempt leaves behind;
* :mod:`~sca_worker.webhooks.deliverer`: the queue of pending deliveries and
  the threads, apart from the stages', that make the attempts.

Delivery never runs on an API thread, a job thread or a worker process
that runs stages.  Each attempt takes only ``http`` and ``https`` URLs
without credentials, refuses loopback, private, link-local (169.254.169.254,
the cloud metadata address), shared, reserved and multicast addresses unless
``SCA_WEBHOOK_ALLOW`` lists them, and follows no redirect (any answer but 2xx
is a failure, tried again after ``SCA_WEBHOOK_BACKOFF`` seconds, doubling).

``SCA_WEBHOOK_ALLOW`` (comma-separated host name patterns such as
``hooks.example.com`` or ``*.example.com``, and addresses or networks such as
``127.0.0.1`` or ``10.0.0.0/8``): unset, any host with public addresses; set,
a host written as a name must match a name pattern (however it resolves:
listing a network does not admit names that resolve into it) and resolve to
public addresses or addresses in a listed network; a host written as an
address must be in a listed network.
"""

from .addresses import Allow, Refused, address_permitted, check_url, resolve, target
from .client import post
from .deliverer import Deliverer
from .deliveries import (
    SIGNATURE_HEADER,
    attempt,
    backoff,
    dispatch,
    prepare,
    sign,
    summary,
)

__all__ = [
    "SIGNATURE_HEADER",
    "Allow",
    "Deliverer",
    "Refused",
    "address_permitted",
    "attempt",
    "backoff",
    "check_url",
    "dispatch",
    "post",
    "prepare",
    "resolve",
    "sign",
    "summary",
    "target",
]
