"""A user's tests of shop.py with streamdelay's pytest plugin (docs/testing.md): the producer with
no server, the handler on a private one, every job run now."""

import streamdelay as sd

import shop


def test_checkout_schedules_a_reminder() -> None:
    with sd.testing.capture() as captured:  # no server: enqueues are recorded
        shop.checkout(42, "ada@example.com")
    captured.assert_enqueued(shop.remind, body=shop.Reminder(42, "ada@example.com"), delay=1800)


def test_reminders_are_sent_and_retried(sd_queue: sd.Queue) -> None:
    sd_queue.enqueue(shop.remind, shop.Reminder(7, "ada@example.com"), delay=1800)
    sd_queue.enqueue(shop.remind, shop.Reminder(13, "alan@example.com"), delay=60)
    worker = shop.worker.replace(config=sd_queue.config)  # the app's worker, on the test's queue
    outcomes = sd.testing.drain(worker)  # both delays and the retry's backoff fast-forwarded
    runs = sorted((o.body.order_id, o.attempt, o.state) for o in outcomes)
    assert runs == [(7, 1, "succeeded"), (13, 1, "retried"), (13, 2, "succeeded")]
    assert sorted(shop.outbox) == ["ada@example.com", "alan@example.com"]
