"""The storage server (NFS exports on Cinder volumes) and the
PersistentVolumes registered on it."""
