import IngestCore
print("ingest-bench: figures are added by the foundation issue")
