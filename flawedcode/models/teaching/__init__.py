"""The teaching model, rebuilt (issue 41): one typed request, readers, a router, a conversation.

Bottom to top: ``request.py`` (the typed ``Request``) <- ``readers.py`` (tokens to slots) <- ``router.py`` (complete or decline) <-
``conversation.py`` (follow-ups merged slot by slot) <- ``answers.py`` (the reading first, then the figure). Nothing here imports the old
``offline_*`` modules; the old model calls into this package where it has been switched over."""
