"""Enqueue from a view, read the result from another (any process can)."""

from datetime import timedelta

from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from .tasks import close_order, send_receipt


def close(request: HttpRequest, order_id: int) -> JsonResponse:
    closing = close_order.enqueue(order_id)
    # a receipt ten minutes later, at a lower priority than the default
    later = timezone.now() + timedelta(minutes=10)
    receipt = send_receipt.using(run_after=later, priority=-10).enqueue(order_id,
                                                                        "ada@example.com")
    return JsonResponse({"close": closing.id, "receipt": receipt.id})


def status(request: HttpRequest, result_id: str) -> JsonResponse:
    result = close_order.get_backend().get_result(result_id)
    done = {"return_value": result.return_value} if result.status == "SUCCESSFUL" else {}
    errors = [e.exception_class_path for e in result.errors]
    return JsonResponse({"status": result.status, "errors": errors, **done})
