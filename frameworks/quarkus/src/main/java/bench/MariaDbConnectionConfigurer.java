package bench;

import io.agroal.api.configuration.supplier.AgroalDataSourceConfigurationSupplier;
import io.agroal.api.exceptionsorter.MySQLExceptionSorter;
import io.quarkus.agroal.runtime.AgroalConnectionConfigurer;
import io.quarkus.agroal.runtime.JdbcDriver;
import io.quarkus.arc.Unremovable;
import io.quarkus.datasource.common.runtime.DatabaseKind;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * Stands in for quarkus-jdbc-mariadb, which is missing from Maven Central here: the same exception
 * sorter it installs, so Agroal evicts a connection that a fatal SQL error left unusable.
 * Agroal looks it up by the kind at start-up, hence unremovable.
 */
@ApplicationScoped
@Unremovable
@JdbcDriver(DatabaseKind.MARIADB)
public class MariaDbConnectionConfigurer implements AgroalConnectionConfigurer {

    @Override
    public void setExceptionSorter(String databaseKind, AgroalDataSourceConfigurationSupplier dataSourceConfiguration) {
        dataSourceConfiguration.connectionPoolConfiguration().exceptionSorter(new MySQLExceptionSorter());
    }
}
