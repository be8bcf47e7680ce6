"""Integrations with other frameworks: ``contrib.django``, a backend of Django's task framework
(docs/integrations.md#django). Each imports its framework only when used."""
