"""Conversation state: messages, history repair, events, session transcripts."""
