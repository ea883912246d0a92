"""The ground floor: the validated configuration, the user-facing errors and the offline
environment. It imports nothing of the project; every other package may import it."""
