-- The schema and seed rows of frameworks/CONTRACT.md: the orchestrator (infra/backends.py) and Compose
-- (infra.yml) both run this file. seq_1_to_N is MariaDB's Sequence engine: one statement seeds
-- every row; N is scenarios.SEED_ROWS.
CREATE DATABASE IF NOT EXISTS bench;
USE bench;
CREATE TABLE IF NOT EXISTS item (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) NOT NULL,
                                 price DECIMAL(10,2) NOT NULL) ENGINE=InnoDB;
INSERT IGNORE INTO item (id, name, price) SELECT seq, CONCAT('item-', seq), seq * 0.25 FROM seq_1_to_50000;
