-- Run by mariadbd (--init-file) before it serves its first connection, for the orchestrator
-- (orchestrator/infra/lockdown.py) and for Compose (infra.yml): mariadb-install-db's root accounts
-- for 127.0.0.1, ::1 and the host name take no password over TCP; root@localhost, the socket, stays.
DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');
FLUSH PRIVILEGES;
