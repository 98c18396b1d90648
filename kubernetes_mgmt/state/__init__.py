"""What the driver remembers about a VNF instance: its signed state in
the instance's metadata, the generation floors that refuse a rolled-back
copy, and the files written for both."""
