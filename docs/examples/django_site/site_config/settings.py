"""Settings of the example shop: Django tasks on streamdelay (docs/integrations.md#django)."""

import os

import django

SECRET_KEY = "example-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]  # testserver: Django's test client
USE_TZ = True
ROOT_URLCONF = "site_config.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
INSTALLED_APPS = [
    "streamdelay.contrib.django",  # manage.py streamdelay_worker
    "shop",
]
if django.VERSION < (6, 0):  # Django 4.2-5.2: the django-tasks backport
    INSTALLED_APPS.append("django_tasks")

TASKS = {
    "default": {
        "BACKEND": "streamdelay.contrib.django.StreamdelayBackend",
        "QUEUES": ["default", "emails"],  # Django queue names: the topics of queue "shop"
        "OPTIONS": {
            "url": os.environ.get("STREAMDELAY_URL", "redis://localhost:6379/0"),
            "queue": "shop",
            "keep_result": 24 * 3600,  # seconds get_result() can read a finished task
        },
    },
}
