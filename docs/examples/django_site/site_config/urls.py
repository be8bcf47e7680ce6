"""The example shop's URLs."""

from django.urls import path

from shop import views

urlpatterns = [
    path("orders/<int:order_id>/close", views.close),
    path("tasks/<str:result_id>", views.status),
]
